--- Next edit suggestions: once the buffer has changed or the cursor rests (normal mode; insert
--- mode too with `next_edit.in_insert`), wait `next_edit.idle_ms`, then ask the server for the
--- edit you are likely to make next (`textDocument/copilotInlineEdit`, the shape Copilot's
--- language server uses), anywhere near the cursor. The edit is drawn in the `spec_lsp.nextedit`
--- namespace: the text it replaces highlighted (SpecLspNextEditDelete), the new text as virtual
--- text after it and virtual lines below it (SpecLspNextEditInsert). The accept key jumps to the
--- edit, then applies it; the dismiss key hides it. Any text change clears it; a newer request
--- cancels an older one; an answer for another buffer version is dropped; nothing is asked while
--- an inline completion (ghost text) or the popup menu is shown.

local api = vim.api
local config = require("spec_lsp.config")
local gate = require("spec_lsp.gate")
local keymap = require("spec_lsp.keymap")

local M = {}

M.namespace = api.nvim_create_namespace("spec_lsp.nextedit")
M.method = "textDocument/copilotInlineEdit"

--- Whether next edits are asked for (`next_edit.enabled`, `:SpecLsp nextedit on|off`).
M.enabled = true

--- What this Neovim did since it started (for `:checkhealth spec_lsp` and the tests).
M.counts = { requests = 0, shown = 0, stale = 0, accepted = 0, dismissed = 0 }

---@class (private) spec_lsp.NextEditShown
---@field edit table          the server's InlineEdit
---@field client_id integer
---@field tick integer        the buffer's changedtick it was shown at
---@field version integer     and the LSP version
---@field row integer         range start and end: 0-based rows, byte columns
---@field col integer
---@field end_row integer
---@field end_col integer
---@field jumped integer[]|nil  where the first accept key put the cursor (1-based row, col)

---@class (private) spec_lsp.NextEditState
---@field client_id integer
---@field augroup integer
---@field timer uv.uv_timer_t
---@field request_id integer|nil  the request in flight
---@field asked string|nil        changedtick and cursor line of the last automatic request
---@field dismissed integer|nil   changedtick at which an edit was dismissed: no more until a change
---@field shown spec_lsp.NextEditShown|nil

---@type table<integer, spec_lsp.NextEditState>
local states = {}

local function opts()
  return config.options.next_edit
end

---@param edit table|nil
---@return string|nil
function M.edit_id(edit)
  local args = edit and edit.command and edit.command.arguments
  local first = type(args) == "table" and args[1] or nil
  return type(first) == "table" and first.id or nil
end

--- The changedtick and the cursor line: where an automatic request was made.
local function position_key(bufnr)
  return ("%d:%d"):format(api.nvim_buf_get_changedtick(bufnr), api.nvim_win_get_cursor(0)[1])
end

local function cancel(state)
  state.timer:stop()
  local client = vim.lsp.get_client_by_id(state.client_id)
  if state.request_id and client then
    client:cancel_request(state.request_id)
  end
  state.request_id = nil
end

local function clear(bufnr)
  if api.nvim_buf_is_valid(bufnr) then
    api.nvim_buf_clear_namespace(bufnr, M.namespace, 0, -1)
  end
  if states[bufnr] then
    states[bufnr].shown = nil
  end
end

--- Whether an inline completion or a completion menu is on screen.
---@param bufnr integer
---@return boolean
local function completion_shown(bufnr)
  if gate.menu_open() then
    return true
  end
  local ok, visible = pcall(function()
    return require("spec_lsp.suggestion").visible(bufnr)
  end)
  return ok and visible == true
end

--- Whether the buffer, the mode and the screen allow a next edit now.
---@param bufnr integer
---@return boolean
local function may_show(bufnr)
  if not M.enabled or not api.nvim_buf_is_valid(bufnr) or not gate.buffer_on(bufnr) then
    return false
  end
  if api.nvim_get_current_buf() ~= bufnr then
    return false
  end
  local mode = api.nvim_get_mode()
  if mode.blocking then
    return false
  end
  local in_mode = mode.mode == "n" or (mode.mode == "i" and opts().in_insert)
  return in_mode and not completion_shown(bufnr)
end

--- A position of the server's (in `encoding`) as a 0-based row and byte column, clamped to the
--- buffer.
---@return integer row, integer col
local function byte_position(bufnr, pos, encoding)
  local count = api.nvim_buf_line_count(bufnr)
  local row = math.max(0, pos.line or 0)
  if row >= count then
    local last = api.nvim_buf_get_lines(bufnr, count - 1, count, false)[1] or ""
    return count - 1, #last
  end
  local line = api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  local ok, col = pcall(vim.str_byteindex, line, encoding, pos.character or 0, false)
  return row, ok and math.min(col, #line) or #line
end

--- An edit across lines: the lines it makes, as virtual lines, under the lines it changes (the
--- lines it leaves as they are left out); a pure insertion under the line before it.
local function show_lines(bufnr, row, col, end_row, end_col, text, hl)
  local old = api.nvim_buf_get_lines(bufnr, row, end_row + 1, false)
  local new = vim.split(old[1]:sub(1, col) .. text .. old[#old]:sub(end_col + 1), "\n", {
    plain = true,
  })
  local lead, trail = 0, 0
  while lead < #old and lead < #new and old[lead + 1] == new[lead + 1] do
    lead = lead + 1
  end
  while
    trail < #old - lead
    and trail < #new - lead
    and old[#old - trail] == new[#new - trail]
  do
    trail = trail + 1
  end
  local virt_lines = {}
  for i = lead + 1, #new - trail do
    virt_lines[#virt_lines + 1] = { { new[i], hl } }
  end
  if #virt_lines == 0 then
    return -- lines deleted: the highlight says it all
  end
  local changed = #old - lead - trail
  local anchor, above = row + lead + changed - 1, false
  if changed == 0 and lead == 0 then
    anchor, above = row, true
  end
  api.nvim_buf_set_extmark(bufnr, M.namespace, anchor, 0, {
    virt_lines = virt_lines,
    virt_lines_above = above,
  })
end

--- Draw `edit` and tell the server it is shown.
---@param bufnr integer
---@param client vim.lsp.Client
---@param edit table
local function show(bufnr, client, edit)
  local range = edit.range
  if type(range) ~= "table" or type(edit.text) ~= "string" then
    return
  end
  local row, col = byte_position(bufnr, range.start, client.offset_encoding)
  local end_row, end_col = byte_position(bufnr, range["end"], client.offset_encoding)
  if end_row < row or (end_row == row and end_col < col) then
    return
  end
  clear(bufnr)
  if end_row > row or end_col > col then
    api.nvim_buf_set_extmark(bufnr, M.namespace, row, col, {
      end_row = end_row,
      end_col = end_col,
      hl_group = "SpecLspNextEditDelete",
      hl_eol = true,
      priority = 250,
    })
  end
  local hl = "SpecLspNextEditInsert"
  if end_row == row and not edit.text:find("\n", 1, true) then
    -- Within one line: the new text right after the text it replaces.
    if edit.text ~= "" then
      api.nvim_buf_set_extmark(bufnr, M.namespace, end_row, end_col, {
        virt_text = { { edit.text, hl } },
        virt_text_pos = "inline",
        hl_mode = "combine",
      })
    end
  else
    show_lines(bufnr, row, col, end_row, end_col, edit.text, hl)
  end
   states[bufnr].shown = {
    edit = edit,
    client_id = client.id,
    tick = api.nvim_buf_get_changedtick(bufnr),
    version = vim.lsp.util.buf_versions[bufnr],
    row = row,
    col = col,
    end_row = end_row,
    end_col = end_col,
  }
  M.counts.shown = M.counts.shown + 1
  client:notify("textDocument/didShowInlineEdit", { item = edit })
end

--- Ask for a next edit at the cursor. `force`: also where it was asked already, or with an edit
--- on screen (the `request()` of the Lua API, and after an accept).
---@param bufnr integer|nil
---@param force boolean|nil
---@return boolean asked
function M.request(bufnr, force)
  bufnr = bufnr or api.nvim_get_current_buf()
  local state = states[bufnr]
  local client = state and vim.lsp.get_client_by_id(state.client_id)
  if not client or client:is_stopped() or not may_show(bufnr) then
    return false
  end
  local key = position_key(bufnr)
  local tick = api.nvim_buf_get_changedtick(bufnr)
  if not force and (state.asked == key or state.shown or state.dismissed == tick) then
    return false
  end
  cancel(state)
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  local version = vim.lsp.util.buf_versions[bufnr]
  params.textDocument.version = version
  local ok, id ---@type boolean, integer|nil
  ok, id = client:request(M.method, params, function(err, result)
    if state.request_id ~= id or states[bufnr] ~= state then
      return -- superseded, cancelled or detached
    end
    state.request_id = nil
    local edit = not err and type(result) == "table" and type(result.edits) == "table"
      and result.edits[1]
    if type(edit) ~= "table" then
      return
    end
    local current = vim.lsp.util.buf_versions[bufnr]
    local doc = type(edit.textDocument) == "table" and edit.textDocument or {}
    if current ~= version or (doc.version ~= nil and doc.version ~= current) then
      M.counts.stale = M.counts.stale + 1
      return -- for another version of the buffer
    end
    if may_show(bufnr) then
      show(bufnr, client, edit)
    end
  end, bufnr)
  if not ok or not id then
    return false
  end
  state.request_id, state.asked = id, key
  M.counts.requests = M.counts.requests + 1
  return true
end

--- Restart the idle timer: a request once the buffer and the cursor rest for `idle_ms`.
local function schedule(bufnr)
  local state = states[bufnr]
  if not state or not M.enabled then
    return
  end
  state.timer:stop()
  state.timer:start(
    opts().idle_ms,
    0,
    vim.schedule_wrap(function()
      if states[bufnr] == state then
        M.request(bufnr)
      end
    end)
  )
end

--- The buffer changed: the edit on screen and the request in flight are for an older text.
local function on_change(bufnr)
  local state = states[bufnr]
  if not state then
    return
  end
  local shown = state.shown
  if shown and shown.tick ~= api.nvim_buf_get_changedtick(bufnr) then
    clear(bufnr)
  end
  if state.request_id and state.asked ~= position_key(bufnr) then
    cancel(state)
  end
  local insert = api.nvim_get_mode().mode:sub(1, 1) == "i"
  if not insert or opts().in_insert then
    schedule(bufnr)
  end
end

--- The cursor moved: an edit on screen stays (the text has not changed); else ask once it rests
--- on a line not asked about yet.
local function on_move(bufnr)
  local state = states[bufnr]
  if not state or state.shown then
    return
  end
  local insert = api.nvim_get_mode().mode:sub(1, 1) == "i"
  if (not insert or opts().in_insert) and state.asked ~= position_key(bufnr) then
    schedule(bufnr)
  end
end

---@param bufnr integer|nil
---@return boolean
function M.visible(bufnr)
  local state = states[bufnr or api.nvim_get_current_buf()]
  return state ~= nil and state.shown ~= nil
end

--- The edit on screen in `bufnr` (the server's InlineEdit), if any.
---@param bufnr integer|nil
---@return table|nil
function M.current(bufnr)
  local state = states[bufnr or api.nvim_get_current_buf()]
  return state and state.shown and state.shown.edit
end

--- Run the edit's command (`spec-lsp.didAcceptInlineEdit`): through a handler registered for it
--- in Neovim, else `workspace/executeCommand`.
---@param client vim.lsp.Client
---@param command table|nil
---@param bufnr integer
local function report_accept(client, command, bufnr)
  if type(command) ~= "table" or type(command.command) ~= "string" then
    return
  end
  local provider = client.server_capabilities.executeCommandProvider
  local commands = type(provider) == "table" and provider.commands or {}
  local name = command.command
  if vim.list_contains(commands, name) or client.commands[name] or vim.lsp.commands[name] then
    client:exec_cmd(command, { bufnr = bufnr })
  else
    client:request("workspace/executeCommand", {
      command = command.command,
      arguments = command.arguments,
    }, function() end, bufnr)
  end
end

--- The accept key's action: jump to the edit's start when the cursor is elsewhere; at its start,
--- apply it, report it and ask for the next one.
---@param bufnr integer|nil
---@return boolean acted  false when no edit is on screen
function M.accept(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  local state = states[bufnr]
  local shown = state and state.shown
  if not shown then
    return false
  end
  local client = vim.lsp.get_client_by_id(shown.client_id)
  local stale = api.nvim_buf_get_changedtick(bufnr) ~= shown.tick
    or vim.lsp.util.buf_versions[bufnr] ~= shown.version
  if not client or stale then
    clear(bufnr)
    return false
  end
  local win = api.nvim_get_current_buf() == bufnr and api.nvim_get_current_win()
    or vim.fn.bufwinid(bufnr)
  if win == -1 then
    return false
  end
  local cursor = api.nvim_win_get_cursor(win)
  -- normal mode puts a cursor past the end of a line on its last character
  local line = api.nvim_buf_get_lines(bufnr, shown.row, shown.row + 1, false)[1] or ""
  local on_line = math.min(shown.col, math.max(#line - 1, 0))
  local at_start = cursor[1] == shown.row + 1
      and (cursor[2] == shown.col or cursor[2] == on_line)
    or (shown.jumped ~= nil and vim.deep_equal(cursor, shown.jumped))
  if not at_start then
    if api.nvim_get_mode().mode == "n" then
      api.nvim_win_call(win, function()
        vim.cmd("normal! m'") -- the jump goes to the jumplist: <C-o> comes back
      end)
    end
    api.nvim_win_set_cursor(win, { shown.row + 1, shown.col })
    shown.jumped = api.nvim_win_get_cursor(win)
    return true
  end
  local edit = shown.edit
  clear(bufnr)
  local text_edit = { range = edit.range, newText = edit.text }
  vim.lsp.util.apply_text_edits({ text_edit }, bufnr, client.offset_encoding)
  -- the cursor on the end of the new text (on its last character in normal mode)
  local lines = vim.split(edit.text, "\n", { plain = true })
  local row = shown.row + #lines - 1
  local col = (#lines == 1 and shown.col or 0) + #lines[#lines]
  if api.nvim_get_mode().mode == "n" and col > 0 and edit.text ~= "" then
    col = col - 1
  end
  pcall(api.nvim_win_set_cursor, win, { row + 1, col })
  M.counts.accepted = M.counts.accepted + 1
  report_accept(client, edit.command, bufnr)
  M.request(bufnr, true) -- the next edit often follows this one
  return true
end

--- Hide the edit on screen; the server hears `spec-lsp/didRejectInlineEdit`. No more is asked
--- for until the buffer changes.
---@param bufnr integer|nil
---@return boolean dismissed
function M.dismiss(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  local state = states[bufnr]
  local shown = state and state.shown
  if not shown then
    return false
  end
  clear(bufnr)
  state.dismissed = api.nvim_buf_get_changedtick(bufnr)
  M.counts.dismissed = M.counts.dismissed + 1
  local client = vim.lsp.get_client_by_id(shown.client_id)
  local id = M.edit_id(shown.edit)
  if client and id then
    client:notify("spec-lsp/didRejectInlineEdit", { id = id })
  end
  return true
end

--- Turn next edits on or off (nil: flip). Off clears what is shown and cancels what is asked.
---@param enabled boolean|nil
function M.enable(enabled)
  if enabled == nil then
    enabled = not M.enabled
  end
  M.enabled = enabled
  for bufnr, state in pairs(states) do
    cancel(state)
    state.asked = nil
    if not enabled then
      clear(bufnr)
    end
  end
  if enabled then
    schedule(api.nvim_get_current_buf())
  end
end

-- --- keys ---

local descs = {
  accept = "Jump to the spec-lsp next edit, or accept it",
  dismiss = "Dismiss the spec-lsp next edit",
}

--- The (mode, lhs, action) triples the options ask for.
local function bindings()
  local o = opts()
  local list = {}
  if o.accept then
    list[#list + 1] = { "n", o.accept, "accept" }
    list[#list + 1] = { "i", o.accept, "accept" }
  end
  if o.dismiss then
    list[#list + 1] = { "n", o.dismiss, "dismiss" }
    if vim.keycode(o.dismiss) ~= vim.keycode("<Esc>") then -- <Esc> keeps leaving insert mode
      list[#list + 1] = { "i", o.dismiss, "dismiss" }
    end
  end
  return list
end

--- Whether the key has something to do now.
local function applies(bufnr, mode, action)
  if not M.visible(bufnr) then
    return false
  end
  return mode == "n" or action == "dismiss" or not completion_shown(bufnr)
end

--- Map the accept and dismiss keys in `bufnr` (normal mode, and insert mode), over what they did
--- (spec_lsp.keymap). In insert mode the accept key wraps spec-lsp's completion accept key when
--- both are <Tab>: so call this after `suggestion.map_keys`, and `unmap_keys` before it.
---@param bufnr integer
function M.map_keys(bufnr)
  for _, b in ipairs(bindings()) do
    local mode, lhs, action = b[1], b[2], b[3]
    keymap.map(bufnr, mode, lhs, descs[action], function()
      if not applies(bufnr, mode, action) then
        return false
      end
      if action == "accept" then
        M.accept(bufnr)
      else
        M.dismiss(bufnr)
      end
      return true
    end)
  end
end

--- Remove this module's keys from `bufnr` and put back the buffer-local mappings they covered.
---@param bufnr integer
function M.unmap_keys(bufnr)
  keymap.unmap(bufnr, { [descs.accept] = true, [descs.dismiss] = true })
end

-- --- attaching ---

--- Follow `bufnr`'s changes and cursor for `client`, and map the keys.
---@param bufnr integer
---@param client vim.lsp.Client
function M.attach(bufnr, client)
  M.detach(bufnr)
  local group = api.nvim_create_augroup("spec_lsp.nextedit." .. bufnr, { clear = true })
  states[bufnr] = { client_id = client.id, augroup = group, timer = assert(vim.uv.new_timer()) }
  local function on(events, fn)
    api.nvim_create_autocmd(events, {
      group = group,
      buffer = bufnr,
      callback = function()
        fn(bufnr)
      end,
    })
  end
  on({ "TextChanged", "TextChangedI", "TextChangedP" }, on_change)
  on({ "CursorMoved", "CursorMovedI", "BufEnter" }, on_move)
  on("InsertLeave", function()
    if not states[bufnr].shown then
      schedule(bufnr) -- the mode may still read insert here: the request looks again
    end
  end)
  on("InsertEnter", function()
    if not opts().in_insert then
      local state = states[bufnr]
      cancel(state)
      clear(bufnr) -- nothing in insert mode
      state.asked = nil
    end
  end)
  on("BufLeave", function()
    cancel(states[bufnr])
  end)
  on("BufWipeout", M.detach)
  M.map_keys(bufnr)
  on_move(bufnr)
end

---@param bufnr integer
function M.detach(bufnr)
  local state = states[bufnr]
  if not state then
    return
  end
  cancel(state)
  if not state.timer:is_closing() then
    state.timer:close()
  end
  clear(bufnr)
  states[bufnr] = nil
  pcall(api.nvim_del_augroup_by_id, state.augroup)
end

--- The highlights and the initial on/off from the options (`setup{}`).
function M.setup()
  M.enabled = opts().enabled
  api.nvim_set_hl(0, "SpecLspNextEditDelete", { link = "DiffDelete", default = true })
  api.nvim_set_hl(0, "SpecLspNextEditInsert", { link = "DiffAdd", default = true })
end

return M
