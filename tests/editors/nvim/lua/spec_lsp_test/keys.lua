-- The full key walk-through against a real server: ghost text, accept next word, accept next
-- line, dismiss, the accept key with nothing to accept, accept all, next suggestion,
-- :SpecLspStats, :checkhealth spec_lsp and :SpecLspToggle. Observations go to pytest.
local api = vim.api

return function(R, spec)
  local ghost_wait = spec.ghost_timeout_ms
  local ns = api.nvim_create_namespace(spec.namespace)
  local keys = require("spec_lsp.config").options.keys

  R.step("open " .. spec.file)
  vim.cmd.edit(vim.fn.fnameescape(spec.file))
  local bufnr = api.nvim_get_current_buf()
  local client, status = R.wait_ready(bufnr, spec.ready_timeout_ms)
  R.observe("status", status)
  R.observe("filetype", vim.bo[bufnr].filetype)

  -- Where the cursor rests, the server warms its prompt up (`spec-lsp/didMoveCursor`): two
  -- rests, two more warm-ups than before them (opening the file may add one of its own).
  local function warm_ups()
    return R.request(client, "spec-lsp/stats").warmUp.started
  end
  local warm_before = warm_ups()
  for _, move in ipairs({ "G", "gg" }) do
    R.step("rest the cursor after " .. move)
    local before = warm_ups()
    R.feed(move)
    local deadline = vim.uv.now() + 10000
    while warm_ups() <= before do -- (no request inside R.wait's condition: it waits itself)
      if vim.uv.now() > deadline then
        error("no warm-up after the cursor rested at " .. move, 0)
      end
      R.sleep(100)
    end
  end
  R.observe("cursor_warm_ups", warm_ups() - warm_before)

  --- Type `keys` (when given), then wait for ghost text; type `more` between tries if none comes.
  local function ghost_after(typed, more)
    if typed then
      R.type(bufnr, typed)
    end
    for try = 1, #more + 1 do
      local ok, ghost = pcall(R.wait, ghost_wait, "ghost text at the cursor", function()
        local g = R.ghost(bufnr, ns)
        local cursor = api.nvim_win_get_cursor(0)
        local here = g and g.row == cursor[1] - 1 and g.col == cursor[2]
        return here and g.text ~= "" and g or nil
      end)
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

  --- Press `key` with ghost text on screen; observe the buffer before and after.
  local function press(name, key, ghost)
    local before = R.snapshot(bufnr)
    R.step("press " .. name .. " " .. key)
    R.feed(key)
    R.wait(5000, "the buffer to change after " .. name, function()
      return R.snapshot(bufnr).text ~= before.text
    end)
    R.observe(name, { ghost = ghost.text, before = before, after = R.snapshot(bufnr) })
  end

  local retry = { "len(", "values", " + " }
  R.step("type at the end of the file")
  local ghost = ghost_after("Go" .. spec.typed, retry)
  press("accept_word", keys.accept_word, ghost)

  ghost = ghost_after(nil, retry)
  press("accept_line", keys.accept_line, ghost)

  ghost = ghost_after("<CR>total = ", retry)
  local before = R.snapshot(bufnr)
  R.step("dismiss")
  R.feed(keys.dismiss)
  R.wait(5000, "the ghost text to go after dismiss", function()
    return R.ghost(bufnr, ns) == nil
  end)
  R.observe("dismiss", { ghost = ghost.text, before = before, after = R.snapshot(bufnr) })

  -- Nothing on screen: the accept key types itself.
  press("accept_key_without_ghost", keys.accept, { text = "" })

  ghost = ghost_after("<CR>return ", retry)
  press("accept_all", keys.accept, ghost)

  ghost = ghost_after("<CR>count = ", retry)
  R.step("next suggestion")
  R.feed(keys.next)
  -- Wait for the key to be taken in, then (bounded) for a suggestion on screen: with one candidate
  -- the same one stays; with several, the next one is drawn.
  R.wait(5000, "Neovim to take in the next key", function()
    return vim.fn.getchar(1) == 0
  end)
  local after = R.wait(10000, "a suggestion on screen after next", function()
    local g = R.ghost(bufnr, ns)
    return g and g.text ~= "" and g or nil
  end)
  R.observe("next", { ghost = ghost.text, after = after })

  R.step(":SpecLspStats")
  vim.cmd("stopinsert")
  vim.cmd("SpecLspStats")
  local float = R.wait(10000, "the stats float", function()
    return R.floats()[1]
  end)
  R.observe("stats_float", float.lines)
  api.nvim_win_close(float.win, true)
  R.observe("stats", R.request(client, "spec-lsp/stats"))

  R.step(":checkhealth spec_lsp")
  vim.cmd("checkhealth spec_lsp")
  R.wait(60000, "the health report", function()
    local text = table.concat(api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    return text:find("spec%-lsp") and text:find("server running") and text
  end)
  R.observe("health", api.nvim_buf_get_lines(0, 0, -1, false))
  vim.cmd("tabclose")

  R.step(":SpecLspToggle (off)")
  vim.cmd("SpecLspToggle")
  R.observe("toggle_off", {
    plugin = require("spec_lsp").enabled,
    visible = require("spec_lsp").visible(bufnr),
    builtin = vim.lsp.inline_completion
      and vim.lsp.inline_completion.is_enabled({ client_id = client.id }),
  })
  R.step(":SpecLspToggle (on)")
  vim.cmd("SpecLspToggle")
  api.nvim_set_current_buf(bufnr)
  R.feed("A")
  ghost = ghost_after("<CR>x = ", retry)
  R.observe("toggle_on", { plugin = require("spec_lsp").enabled, ghost = ghost.text })
  R.feed("<Esc>")
end
