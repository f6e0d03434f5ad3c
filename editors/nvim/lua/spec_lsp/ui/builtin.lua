--- Suggestions through Neovim 0.12's own `vim.lsp.inline_completion` (ghost text as extmarks in
--- the `nvim.lsp.inline_completion` namespace). This module enables it per buffer, hands the
--- current item to the accept logic, reports which suggestion is on screen, and asks for the
--- alternatives to cycle: Neovim's own requests are all Automatic (one item), so the next/prev
--- key makes Neovim ask again at once and sends that one request as Invoked (up to 3 items).
--- With `auto_trigger = false` its automatic requests are not sent; the trigger key asks the same
--- way as next/prev do. Where spec_lsp.gate says no (suggestions off in the buffer, a completion
--- menu open), nothing is asked and what is shown goes. The Neovim internals this needs are
--- reached through spec_lsp.internals only.

local api = vim.api
local config = require("spec_lsp.config")
local gate = require("spec_lsp.gate")
local internals = require("spec_lsp.internals")

local M = {}

M.namespace = internals.namespace

---@class (private) spec_lsp.Shown
---@field client_id integer
---@field items lsp.InlineCompletionItem[]
---@field index integer

---@type table<integer, spec_lsp.Shown>  bufnr -> the items of the last answer on screen
local shown = {}

---@class (private) spec_lsp.Wanted
---@field tick integer     the buffer's changedtick when they were asked for
---@field cursor integer[] and the cursor
---@field count integer    the move to make once they are there (1 next, -1 previous, 0 none)

---@type table<integer, spec_lsp.Wanted>  bufnr -> alternatives asked for at this very state
local wanted = {}

local function item_id(item)
  local args = item and item.command and item.command.arguments
  local first = type(args) == "table" and args[1] or nil
  return type(first) == "table" and first.id or nil
end

local function report_shown(bufnr)
  local state = shown[bufnr]
  local client = state and vim.lsp.get_client_by_id(state.client_id)
  local id = state and item_id(state.items[state.index])
  if client and id then
    client:notify("spec-lsp/didShowCompletion", { id = id })
  end
end

--- The alternatives asked for in `bufnr`, if the buffer and the cursor are still where they were
--- asked for (they are asked for once either way).
---@param bufnr integer|nil
---@return spec_lsp.Wanted|nil
local function take_wanted(bufnr)
  local want = bufnr and wanted[bufnr]
  if not want then
    return nil
  end
  wanted[bufnr] = nil
  local same = api.nvim_get_current_buf() == bufnr
    and api.nvim_buf_get_changedtick(bufnr) == want.tick
    and vim.deep_equal(api.nvim_win_get_cursor(0), want.cursor)
  return same and want or nil
end

--- An empty answer, as the client's own: Neovim takes down what it shows.
---@param handler function
---@param client vim.lsp.Client
---@param bufnr integer|nil
local function answer_nothing(handler, client, bufnr)
  handler(nil, { items = {} }, { client_id = client.id, bufnr = bufnr })
end

--- Neovim shows the first item of each inline-completion answer but tells nobody; wrap this
--- client's `request` so the server hears `spec-lsp/didShowCompletion` for it, so that the
--- request after a next/prev key asks for alternatives (triggerKind Invoked), and so that nothing
--- is asked or shown where the gate says no.
---@param client vim.lsp.Client
local function watch_answers(client)
  internals.wrap_request(client, function(request, self, method, params, handler, bufnr)
    if method ~= "textDocument/inlineCompletion" or not handler then
      return request(self, method, params, handler, bufnr)
    end
    local uri = type(params) == "table" and params.textDocument and params.textDocument.uri
    bufnr = bufnr or (uri and vim.uri_to_bufnr(uri)) or api.nvim_get_current_buf()
    if not gate.allows(bufnr) then
      wanted[bufnr] = nil
      answer_nothing(handler, self, bufnr)
      return false
    end
    local want = take_wanted(bufnr)
    if not want and not config.options.auto_trigger then
      return false -- typing asks nothing: only the trigger (or next/prev) key does
    end
    if want then
      params = vim.deepcopy(params)
      params.context = vim.tbl_extend("force", params.context or {}, { triggerKind = 1 })
    end
    local inner = handler
    handler = function(err, result, ctx, ...)
      if ctx and ctx.bufnr and not gate.allows(ctx.bufnr) then
        return answer_nothing(inner, self, ctx.bufnr) -- a menu opened while it was asked for
      end
      inner(err, result, ctx, ...)
      local items = not err and result and (result.items or result) or nil
      if ctx and ctx.bufnr and type(items) == "table" and items[1] then
        local state = { client_id = ctx.client_id, items = items, index = 1 }
        shown[ctx.bufnr] = state
        if want and want.count ~= 0 and #items > 1 then -- Neovim drew the first: move on
          vim.lsp.inline_completion.select({ bufnr = ctx.bufnr, count = want.count })
          state.index = (want.count % #items) + 1
        end
        report_shown(ctx.bufnr)
      end
    end
    return request(self, method, params, handler, bufnr)
  end)
end

---@param bufnr integer
---@param client vim.lsp.Client
function M.attach(bufnr, client)
  watch_answers(client)
  vim.lsp.inline_completion.enable(true, { bufnr = bufnr })
end

---@param bufnr integer
function M.detach(bufnr)
  shown[bufnr] = nil
  wanted[bufnr] = nil
end

---@param client vim.lsp.Client
---@param enabled boolean
function M.enable(client, enabled)
  vim.lsp.inline_completion.enable(enabled, { client_id = client.id })
end

---@param bufnr integer
---@return boolean
function M.visible(bufnr)
  return #api.nvim_buf_get_extmarks(bufnr, M.namespace, 0, -1, { limit = 1 }) > 0
end

--- An item asked for at an earlier cursor on this line, whose text starts with what was typed
--- since, is shown (by Neovim) from the cursor on: accept that rest at the cursor.
---@param bufnr integer
---@param cursor integer[]  (1-based row, byte col)
---@param item spec_lsp.Item
---@return spec_lsp.Item
local function typed_through(bufnr, cursor, item)
  local row, col = cursor[1] - 1, cursor[2]
  local empty = item.row == item.end_row and item.col == item.end_col
  if not empty or item.row ~= row or item.col >= col then
    return item
  end
  local typed = api.nvim_buf_get_text(bufnr, row, item.col, row, col, {})[1]
  if not vim.startswith(item.text, typed) then
    return item
  end
  return vim.tbl_extend("force", item, {
    text = item.text:sub(#typed + 1),
    col = col,
    end_col = col,
  })
end

--- Take the suggestion on screen off it and call `fn(item)` (scheduled) with it.
---@param bufnr integer
---@param fn fun(item: spec_lsp.Item)
---@return boolean taken
function M.take(bufnr, fn)
  return vim.lsp.inline_completion.get({
    bufnr = bufnr,
    on_accept = function(item)
      shown[bufnr] = nil
      local text = item.insert_text
      local range = item.range
      local cursor = api.nvim_win_get_cursor(0)
      fn(typed_through(bufnr, cursor, {
        text = type(text) == "string" and text or text.value,
        id = item_id(item),
        command = item.command,
        client_id = item.client_id,
        row = range and range.start.row or cursor[1] - 1,
        col = range and range.start.col or cursor[2],
        end_row = range and range.end_.row or cursor[1] - 1,
        end_col = range and range.end_.col or cursor[2],
      }))
    end,
  })
end

--- One item on screen: have Neovim ask again now, as Invoked (see `watch_answers`), and move by
--- `count` once the alternatives are there. Neovim asks on its own autocommands, after its
--- debounce; without its augroup (another Neovim) the key does nothing.
---@param bufnr integer
---@param count integer
local function ask_alternatives(bufnr, count)
  local tick, cursor = api.nvim_buf_get_changedtick(bufnr), api.nvim_win_get_cursor(0)
  wanted[bufnr] = { tick = tick, cursor = cursor, count = count }
  if not internals.ask_again(bufnr) then
    wanted[bufnr] = nil
  end
end

--- Take the suggestion in `bufnr` off the screen (a completion menu opened, the buffer was
--- turned off); the next change asks again.
---@param bufnr integer
function M.hide(bufnr)
  shown[bufnr] = nil
  vim.lsp.inline_completion.get({ bufnr = bufnr, on_accept = function() end })
end

--- Ask for a suggestion here now, as Invoked, whatever `auto_trigger` says.
---@param bufnr integer
---@return boolean
function M.trigger(bufnr)
  if not gate.allows(bufnr) then
    return false
  end
  ask_alternatives(bufnr, 0)
  return wanted[bufnr] ~= nil
end

---@param bufnr integer
---@param count integer
---@return boolean moved
function M.select(bufnr, count)
  if not M.visible(bufnr) then
    return false
  end
  local state = shown[bufnr]
  if not state or #state.items < 2 then
    ask_alternatives(bufnr, count)
    return true
  end
  vim.lsp.inline_completion.select({ bufnr = bufnr, count = count })
  state.index = (state.index - 1 + count) % #state.items + 1 -- as Neovim's wrap-around
  report_shown(bufnr)
  return true
end

return M
