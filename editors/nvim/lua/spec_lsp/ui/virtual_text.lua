--- Suggestions as this plugin's own virtual text (Neovim 0.11, or `ui = "virtual_text"`): asks
--- `textDocument/inlineCompletion` after a short debounce, cancels the pending request on every
--- change, and draws the item as extmarks in the `spec_lsp.suggestion` namespace. Where
--- spec_lsp.gate says no (suggestions off in the buffer, a completion menu open), nothing is
--- asked or shown.

local api = vim.api
local config = require("spec_lsp.config")
local gate = require("spec_lsp.gate")

local M = {}

M.namespace = api.nvim_create_namespace("spec_lsp.suggestion")

---@class (private) spec_lsp.BufState
---@field client_id integer
---@field augroup integer
---@field enabled boolean
---@field key string|nil         changedtick and cursor the pending or shown answer belongs to
---@field request_id integer|nil
---@field timer uv.uv_timer_t|nil
---@field items lsp.InlineCompletionItem[]
---@field index integer
---@field anchor integer[]|nil   {row, col} (0-based, bytes) the items start at

---@type table<integer, spec_lsp.BufState>
local states = {}

local function item_id(item)
  local args = item and item.command and item.command.arguments
  local first = type(args) == "table" and args[1] or nil
  return type(first) == "table" and first.id or nil
end

local function item_text(item)
  local text = item.insertText
  return type(text) == "table" and text.value or text or ""
end

local function position_key(bufnr)
  local cursor = api.nvim_win_get_cursor(0)
  return ("%d:%d:%d"):format(api.nvim_buf_get_changedtick(bufnr), cursor[1], cursor[2])
end

local function hide(bufnr)
  api.nvim_buf_clear_namespace(bufnr, M.namespace, 0, -1)
end

--- Forget the suggestion and cancel the pending request and timer.
local function reset(bufnr)
  local state = states[bufnr]
  if not state then
    return
  end
  if state.timer then
    state.timer:stop()
    state.timer:close()
    state.timer = nil
  end
  local client = vim.lsp.get_client_by_id(state.client_id)
  if state.request_id and client then
    client:cancel_request(state.request_id)
  end
  state.request_id, state.key, state.items, state.index, state.anchor = nil, nil, {}, 1, nil
  hide(bufnr)
end

local function show(bufnr)
  local state = states[bufnr]
  local item = state.items[state.index]
  hide(bufnr)
  if not item or not state.anchor then
    return
  end
  local lines = vim.split(item_text(item), "\n", { plain = true })
  local hl = config.options.hl_group
  local virt_lines = {}
  for i = 2, #lines do
    virt_lines[#virt_lines + 1] = { { lines[i], hl } }
  end
  local first = { { lines[1], hl } }
  if #state.items > 1 then
    first[2] = { (" (%d/%d)"):format(state.index, #state.items), "Comment" }
  end
  api.nvim_buf_set_extmark(bufnr, M.namespace, state.anchor[1], state.anchor[2], {
    virt_text = first,
    virt_text_pos = "inline",
    virt_lines = #virt_lines > 0 and virt_lines or nil,
    hl_mode = "combine",
  })
  local client = vim.lsp.get_client_by_id(state.client_id)
  local id = item_id(item)
  if client and id then
    client:notify("spec-lsp/didShowCompletion", { id = id })
  end
end

--- Keep the items that insert at the cursor; an item whose range starts earlier is shown from
--- the cursor on when its text repeats what is already typed there.
local function usable(bufnr, items, client, row, col)
  local line = api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  local kept = {}
  for _, item in ipairs(items) do
    local text = item_text(item)
    local start = item.range and item.range.start
    if start and start.line == row then
      local scol = vim.str_byteindex(line, client.offset_encoding, start.character, false)
      local typed = line:sub(scol + 1, col)
      if scol <= col and vim.startswith(text, typed) then
        item = vim.deepcopy(item)
        item.insertText, item.range = text:sub(#typed + 1), nil
      else
        item = nil
      end
    end
    if item and item_text(item) ~= "" then
      kept[#kept + 1] = item
    end
  end
  return kept
end

--- Ask for a suggestion at the cursor; `invoked`: an explicit request (triggerKind Invoked), which
--- the server answers with up to 3 distinct items to cycle, the shown one first; `show_first`:
--- show that first one (the trigger key), not the next (the next/prev keys).
---@param bufnr integer
---@param invoked boolean|nil
---@param show_first boolean|nil
local function request(bufnr, invoked, show_first)
  local state = states[bufnr]
  local client = state and vim.lsp.get_client_by_id(state.client_id)
  if not client or not state.enabled or api.nvim_get_current_buf() ~= bufnr then
    return
  end
  if not gate.allows(bufnr) then
    return
  end
  if not api.nvim_get_mode().mode:match("^i") then
    return
  end
  local key = position_key(bufnr)
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  params.context = { triggerKind = invoked and 1 or 2 } -- Invoked or Automatic
  local cursor = api.nvim_win_get_cursor(0)
  local ok, id ---@type boolean, integer|nil
  ok, id = client:request("textDocument/inlineCompletion", params, function(err, result)
    if state.request_id ~= id then
      return -- superseded
    end
    state.request_id = nil
    if err or not result or not api.nvim_buf_is_valid(bufnr) or position_key(bufnr) ~= key then
      return
    end
    if not gate.allows(bufnr) then
      return -- a menu opened (or the buffer was turned off) while it was asked for
    end
    local items = usable(bufnr, result.items or result, client, cursor[1] - 1, cursor[2])
    -- after an explicit request for alternatives, the one after the shown (first) item
    local index = invoked and not show_first and #items > 1 and 2 or 1
    state.items, state.index, state.anchor = items, index, { cursor[1] - 1, cursor[2] }
    show(bufnr)
  end, bufnr)
  if ok then
    state.request_id, state.key = id, key
  end
end

--- On every change or cursor move: drop the suggestion, cancel the request, ask again later.
local function on_change(bufnr)
  local state = states[bufnr]
  if not state or state.key == position_key(bufnr) then
    return -- the answer pending or on screen is for this very position
  end
  reset(bufnr)
  if not state.enabled or not config.options.auto_trigger or not gate.allows(bufnr) then
    return -- with auto_trigger off only the trigger key asks
  end
  state.key = position_key(bufnr)
  state.timer = vim.defer_fn(function()
    state.timer = nil
    request(bufnr)
  end, config.options.debounce_ms)
end

---@param bufnr integer
---@param client vim.lsp.Client
function M.attach(bufnr, client)
  if states[bufnr] then
    states[bufnr].client_id = client.id
    return
  end
  local group = api.nvim_create_augroup("spec_lsp.virtual_text." .. bufnr, { clear = true })
  states[bufnr] =
    { client_id = client.id, augroup = group, enabled = true, items = {}, index = 1 }
  api.nvim_create_autocmd({ "InsertEnter", "TextChangedI", "CursorMovedI" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      on_change(bufnr)
    end,
  })
  api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      reset(bufnr)
    end,
  })
end

---@param bufnr integer
function M.detach(bufnr)
  local state = states[bufnr]
  if state then
    reset(bufnr)
    api.nvim_del_augroup_by_id(state.augroup)
    states[bufnr] = nil
  end
end

---@param client vim.lsp.Client
---@param enabled boolean
function M.enable(client, enabled)
  for bufnr, state in pairs(states) do
    if state.client_id == client.id then
      state.enabled = enabled
      reset(bufnr)
    end
  end
end

--- Take the suggestion in `bufnr` off the screen (a completion menu opened, the buffer was
--- turned off); the next change asks again.
---@param bufnr integer
function M.hide(bufnr)
  reset(bufnr)
end

---@param bufnr integer
---@return boolean
function M.visible(bufnr)
  local state = states[bufnr]
  return state ~= nil and state.items[state.index] ~= nil
end

---@param bufnr integer
---@param fn fun(item: spec_lsp.Item)
---@return boolean taken
function M.take(bufnr, fn)
  if not M.visible(bufnr) then
    return false
  end
  local state = states[bufnr]
  local item, anchor = state.items[state.index], state.anchor
  local taken = {
    text = item_text(item),
    id = item_id(item),
    command = item.command,
    client_id = state.client_id,
    row = anchor[1],
    col = anchor[2],
    end_row = anchor[1],
    end_col = anchor[2],
  }
  reset(bufnr)
  vim.schedule(function()
    fn(taken)
  end)
  return true
end

--- Ask for a suggestion here now (Invoked), whatever `auto_trigger` says.
---@param bufnr integer
---@return boolean
function M.trigger(bufnr)
  local state = states[bufnr]
  if not state or not state.enabled or not gate.allows(bufnr) then
    return false
  end
  reset(bufnr)
  request(bufnr, true, true)
  return true
end

---@param bufnr integer
---@param count integer
---@return boolean moved
function M.select(bufnr, count)
  local state = states[bufnr]
  if not M.visible(bufnr) then
    return false
  end
  if #state.items > 1 then
    state.index = (state.index - 1 + count) % #state.items + 1
    show(bufnr)
  elseif not state.request_id then
    request(bufnr, true) -- one item: ask explicitly for the alternatives, shown when they come
  end
  return true
end

return M
