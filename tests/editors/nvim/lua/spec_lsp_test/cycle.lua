-- Cycling through alternatives: ghost text from an automatic request, the plugin's next key (an
-- explicit request: up to 3 items, the second drawn), its previous key (the first again), Neovim
-- 0.12's own `vim.lsp.inline_completion.select()` (built-in ui), and accepting the second.
-- Every inline-completion request the client sends, and its answer, is observed too.
local api = vim.api

return function(R, spec)
  local ghost_wait = spec.ghost_timeout_ms
  local ns = api.nvim_create_namespace(spec.namespace)
  local keys = require("spec_lsp.config").options.keys

  R.step("open " .. spec.file)
  vim.cmd.edit(vim.fn.fnameescape(spec.file))
  local bufnr = api.nvim_get_current_buf()
  local client = R.wait_ready(bufnr, spec.ready_timeout_ms)

  -- What went over the wire: requests as the rpc layer sends them (after the plugin's changes).
  local exchanges = {}
  local rpc_request = client.rpc.request
  client.rpc.request = function(method, params, callback, ...)
    if method == "textDocument/inlineCompletion" then
      local exchange = { trigger = params.context and params.context.triggerKind }
      exchanges[#exchanges + 1] = exchange
      local inner = callback
      callback = function(err, result)
        local items = not err and result and (result.items or result) or {}
        exchange.items = vim.tbl_map(function(item)
          return type(item.insertText) == "string" and item.insertText or item.insertText.value
        end, items)
        return inner(err, result)
      end
    end
    return rpc_request(method, params, callback, ...)
  end

  local function ghost_text()
    local g = R.ghost(bufnr, ns)
    local cursor = api.nvim_win_get_cursor(0)
    return g and g.row == cursor[1] - 1 and g.col == cursor[2] and g.text ~= "" and g.text or nil
  end

  --- Type `typed`, then wait for ghost text; type `more` between tries if none comes.
  local function ghost_after(typed, more)
    R.type(bufnr, typed)
    for try = 1, #more + 1 do
      local ok, ghost = pcall(R.wait, ghost_wait, "ghost text at the cursor", ghost_text)
      if ok then
        return ghost
      end
      if try > #more then
        error(ghost, 0)
      end
      R.step("no ghost text yet; typing " .. more[try])
      R.type(bufnr, more[try])
    end
  end

  --- Run `act`, then wait until the ghost text at the cursor is not `from`; observe it as `name`.
  local function cycle(name, from, act)
    R.step(name)
    local sent = #exchanges
    act()
    local ghost = R.wait(ghost_wait, "other ghost text after " .. name, function()
      local text = ghost_text()
      return text ~= from and text
    end)
    R.observe(name, { ghost = ghost, requests = #exchanges - sent })
    return ghost
  end

  R.step("type at the end of the file")
  local first = ghost_after("Go" .. spec.typed, { "len(", "values", " + " })
  R.observe("first", { ghost = first, requests = vim.deepcopy(exchanges) })
  R.sleep(300) -- Neovim's own debounce: no automatic request is still to come

  local second = cycle("next_key", first, function()
    R.feed(keys.next)
  end)
  local invoked = exchanges[#exchanges]
  R.observe("invoked", invoked)
  cycle("prev_key", second, function()
    R.feed(keys.prev)
  end)
  cycle("next_key_again", first, function()
    R.feed(keys.next)
  end)
  if spec.namespace == "nvim.lsp.inline_completion" then
    -- Neovim's own cycling over the same items, as a user's mapping of it would do: from the
    -- second on, +1, -1, -1, +1 (back on the second for the accept below).
    local now = second
    for step, count in ipairs({ 1, -1, -1, 1 }) do
      now = cycle("builtin_select_" .. step, now, function()
        vim.lsp.inline_completion.select({ bufnr = bufnr, count = count })
      end)
    end
  end

  local before = R.snapshot(bufnr)
  local shown = ghost_text()
  R.step("accept the second")
  R.feed(keys.accept)
  R.wait(5000, "the buffer to change after accept", function()
    return R.snapshot(bufnr).text ~= before.text
  end)
  R.observe("accept", { ghost = shown, before = before, after = R.snapshot(bufnr) })
  R.observe("exchanges", exchanges)
  R.observe("stats", R.request(client, "spec-lsp/stats"))
  vim.cmd("stopinsert")
end
