--- Suggestions through Neovim 0.12's own `vim.lsp.inline_completion` (ghost text as extmarks in
--- the `nvim.lsp.inline_completion` namespace). This module enables it per buffer, hands the
--- current item to the accept logic, and reports which suggestion is on screen.

local api = vim.api

local M = {}

M.namespace = api.nvim_create_namespace("nvim.lsp.inline_completion")

---@class (private) spec_lsp.Shown
---@field client_id integer
---@field items lsp.InlineCompletionItem[]
---@field index integer

---@type table<integer, spec_lsp.Shown>  bufnr -> the items of the last answer on screen
local shown = {}

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

--- Neovim shows the first item of each inline-completion answer but tells nobody; wrap this
--- client's `request` so the server hears `spec-lsp/didShowCompletion` for it.
---@param client vim.lsp.Client
local function watch_answers(client)
  if client._spec_lsp_watched then
    return
  end
  client._spec_lsp_watched = true
  local request = client.request
  client.request = function(self, method, params, handler, bufnr)
    if method == "textDocument/inlineCompletion" and handler then
      local inner = handler
      handler = function(err, result, ctx, ...)
        inner(err, result, ctx, ...)
        local items = not err and result and (result.items or result) or nil
        if ctx and ctx.bufnr and type(items) == "table" and items[1] then
          shown[ctx.bufnr] = { client_id = ctx.client_id, items = items, index = 1 }
          report_shown(ctx.bufnr)
        end
      end
    end
    return request(self, method, params, handler, bufnr)
  end
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

---@param bufnr integer
---@param count integer
---@return boolean moved
function M.select(bufnr, count)
  if not M.visible(bufnr) then
    return false
  end
  vim.lsp.inline_completion.select({ bufnr = bufnr, count = count })
  local state = shown[bufnr]
  if state and #state.items > 1 then
    state.index = (state.index - 1 + count) % #state.items + 1 -- as Neovim's wrap-around
    report_shown(bufnr)
  end
  return true
end

return M
