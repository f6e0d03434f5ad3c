--- Accepting, partially accepting, dismissing and cycling suggestions, the insert-mode keys for
--- them, and reporting accepts to the server. The ui module (builtin or virtual_text) owns how a
--- suggestion is requested and drawn; this module only takes the current item from it.

local api = vim.api
local config = require("spec_lsp.config")
local keymap = require("spec_lsp.keymap")
local partial = require("spec_lsp.partial")

local M = {}

---@class spec_lsp.Item
---@field text string            text that replaces the range
---@field id string|nil          the server's suggestion id
---@field command lsp.Command|nil
---@field client_id integer
---@field row integer            range start and end, 0-based rows and byte columns
---@field col integer
---@field end_row integer
---@field end_col integer

---@type table  the ui module in use (spec_lsp.ui.builtin or spec_lsp.ui.virtual_text)
M.ui = nil

---@param name "builtin"|"virtual_text"
function M.use(name)
  M.ui = require("spec_lsp.ui." .. name)
end

--- Insert `text` in place of the item's range and put the cursor after it.
---@param bufnr integer
---@param item spec_lsp.Item
---@param text string
local function insert(bufnr, item, text)
  local lines = vim.split(text, "\n", { plain = true })
  api.nvim_buf_set_text(bufnr, item.row, item.col, item.end_row, item.end_col, lines)
  local win = vim.fn.bufwinid(bufnr)
  if win ~= -1 then
    local col = (#lines == 1 and item.col or 0) + #lines[#lines]
    api.nvim_win_set_cursor(win, { item.row + #lines, col })
  end
end

--- Tell the server: the item's own command for a whole accept (as Neovim does), else the
--- notification; `spec-lsp/didPartiallyAcceptCompletion` for a part.
---@param bufnr integer
---@param item spec_lsp.Item
---@param accepted string|nil  the part accepted; nil for all of it
local function report(bufnr, item, accepted)
  local client = vim.lsp.get_client_by_id(item.client_id)
  if not client then
    return
  end
  if accepted then
    if item.id then
      client:notify(
        "spec-lsp/didPartiallyAcceptCompletion",
        { id = item.id, acceptedLength = partial.utf16_len(accepted) }
      )
    end
  elseif item.command then
    client:exec_cmd(item.command, { bufnr = bufnr })
  elseif item.id then
    client:notify("spec-lsp/didAcceptCompletion", { id = item.id })
  end
end

--- A range that covers text already typed: keep the range only if the item repeats that text,
--- and then treat the rest as inserted at the range's end (so parts can be taken from it).
---@param bufnr integer
---@param item spec_lsp.Item
---@return spec_lsp.Item|nil
local function at_range_end(bufnr, item)
  if item.row == item.end_row and item.col == item.end_col then
    return item
  end
  local typed = table.concat(
    api.nvim_buf_get_text(bufnr, item.row, item.col, item.end_row, item.end_col, {}),
    "\n"
  )
  if not vim.startswith(item.text, typed) then
    return nil
  end
  return vim.tbl_extend("force", item, {
    text = item.text:sub(#typed + 1),
    row = item.end_row,
    col = item.end_col,
  })
end

--- Accept the suggestion on screen: "all", "word" (next word) or "line" (to the end of line).
---@param kind "all"|"word"|"line"
---@param bufnr integer|nil
---@return boolean accepted  false when there was nothing to accept
function M.accept(kind, bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  if not M.ui then
    return false
  end
  return M.ui.take(bufnr, function(item)
    if not api.nvim_buf_is_valid(bufnr) then
      return
    end
    local rest = kind ~= "all" and at_range_end(bufnr, item) or nil
    local part = rest
        and (kind == "word" and partial.next_word(rest.text) or partial.next_line(rest.text))
      or nil
    if not rest or not part or #part >= #rest.text then
      insert(bufnr, item, item.text)
      report(bufnr, item, nil)
    elseif part ~= "" then
      insert(bufnr, rest, part)
      report(bufnr, item, part)
    end
  end)
end

--- Hide the suggestion on screen until the next edit.
---@param bufnr integer|nil
---@return boolean dismissed
function M.dismiss(bufnr)
  return M.ui ~= nil and M.ui.take(bufnr or api.nvim_get_current_buf(), function() end)
end

--- Show the next (count > 0) or previous (count < 0) suggestion.
---@param count integer
---@param bufnr integer|nil
---@return boolean
function M.select(count, bufnr)
  return M.ui ~= nil and M.ui.select(bufnr or api.nvim_get_current_buf(), count)
end

---@param bufnr integer|nil
---@return boolean
function M.visible(bufnr)
  return M.ui ~= nil and M.ui.visible(bufnr or api.nvim_get_current_buf())
end

--- Ask for a suggestion at the cursor now (an explicit request: up to 3 to cycle), whether or not
--- `auto_trigger` is on.
---@param bufnr integer|nil
---@return boolean asked
function M.trigger(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  return M.ui ~= nil and vim.lsp.get_clients({ bufnr = bufnr, name = "spec_lsp" })[1] ~= nil
    and M.ui.trigger(bufnr)
end

local actions = {
  accept = { "Accept the spec-lsp suggestion", "all" },
  accept_word = { "Accept the next word of the suggestion", "word" },
  accept_line = { "Accept the next line of the suggestion", "line" },
  dismiss = { "Dismiss the spec-lsp suggestion" },
  next = { "Next spec-lsp suggestion", 1 },
  prev = { "Previous spec-lsp suggestion", -1 },
  trigger = { "Ask spec-lsp for a suggestion here" },
}

---@param name string
---@return boolean done
local function run(name)
  local arg = actions[name][2]
  if name == "dismiss" then
    return M.dismiss()
  elseif name == "trigger" then
    return M.trigger()
  elseif type(arg) == "number" then
    return M.select(arg)
  end
  return M.accept(arg)
end

--- Map the configured insert-mode keys in `bufnr`. A key with nothing to act on does what it did
--- before (spec_lsp.keymap): the mapping spec-lsp replaced, the global one, else the key itself.
---@param bufnr integer
function M.map_keys(bufnr)
  for name, lhs in pairs(config.options.keys) do
    local action = actions[name]
    if lhs and action then
      keymap.map(bufnr, "i", lhs, action[1], function()
        return run(name)
      end)
    end
  end
end

return M
