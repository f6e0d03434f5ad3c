--- spec-lsp for Neovim: inline completions (ghost text) from the spec-lsp language server.
---
---   require("spec_lsp").setup({ init_options = { preset = "coder" } })
---
--- This module wires the parts together: options (config), the client (lsp), keys and accepts
--- (suggestion), where the cursor rests (cursor: the server warms its prompt up), the ghost
--- text itself (ui.builtin on 0.12+, ui.virtual_text on 0.11), next edit suggestions
--- (nextedit), the server's state (status: the statusline, `:SpecLsp status`), whether a buffer
--- gets suggestions now (gate: on, on in this buffer, no completion menu open), the commands, and
--- `:checkhealth spec_lsp` (health).

local api = vim.api
local config = require("spec_lsp.config")
local cursor = require("spec_lsp.cursor")
local definitions = require("spec_lsp.definitions")
local gate = require("spec_lsp.gate")
local lsp = require("spec_lsp.lsp")
local nextedit = require("spec_lsp.nextedit")
local status = require("spec_lsp.status")
local suggestion = require("spec_lsp.suggestion")

local M = {}

M.did_setup = false
--- Suggestions on in this Neovim (`toggle`); a buffer's own switch is `vim.b.spec_lsp_enabled`.
M.enabled = true

--- Accept the suggestion on screen ("all", "word" or "line"); false when there is none.
M.accept = suggestion.accept
M.dismiss = suggestion.dismiss
M.select = suggestion.select
M.visible = suggestion.visible
--- Ask for a suggestion at the cursor now (the way to get one with `auto_trigger = false`).
M.trigger = suggestion.trigger

--- Next edit suggestions: `request()` asks at the cursor now, `accept()` jumps to the edit on
--- screen or (at its start) applies it, `dismiss()`, `visible()`, `current()` (the server's
--- InlineEdit on screen), `enable(on)` (nil: flip). All take an optional buffer number.
M.nextedit = {
  request = function(bufnr)
    return nextedit.request(bufnr, true)
  end,
  accept = nextedit.accept,
  dismiss = nextedit.dismiss,
  visible = nextedit.visible,
  current = nextedit.current,
  enable = function(enabled)
    M.nextedit_toggle(enabled)
  end,
}

--- The statusline text: "" when no spec-lsp server runs, else e.g. "spec-lsp coder",
--- "spec-lsp loading 40%", "spec-lsp off", "spec-lsp failed", "spec-lsp engine down". >lua
---   vim.o.statusline = "%f %= %{v:lua.require'spec_lsp'.statusline()}"
---@return string
function M.statusline()
  return status.text(lsp.client() ~= nil, gate.buffer_enabled(api.nvim_get_current_buf()))
end

---@param client vim.lsp.Client
---@param bufnr integer
local function on_attach(client, bufnr)
  suggestion.ui.attach(bufnr, client)
  suggestion.ui.enable(client, M.enabled)
  nextedit.unmap_keys(bufnr) -- so that suggestion keeps what its keys did before spec-lsp
  suggestion.map_keys(bufnr)
  nextedit.attach(bufnr, client) -- its <Tab> wraps suggestion's
  cursor.attach(bufnr, client)
  definitions.attach(bufnr, client) -- with `editor_definitions` on only
  status.refresh(client)
end

--- Turn suggestions on or off (nil: flip), in this Neovim and in the server.
---@param enabled boolean|nil
function M.toggle(enabled)
  if enabled == nil then
    enabled = not M.enabled
  end
  M.enabled = enabled
  gate.enabled = enabled
  local client = lsp.client()
  if client then
    suggestion.ui.enable(client, enabled)
    lsp.configure({ enabled = enabled })
    status.refresh(client)
  end
  pcall(vim.cmd.redrawstatus)
  vim.notify("spec-lsp: suggestions " .. (enabled and "on" or "off"), vim.log.levels.INFO)
end

--- Turn suggestions on or off (nil: flip) in one buffer (default: the current one), through
--- `vim.b[bufnr].spec_lsp_enabled`; the other buffers keep theirs. Off: nothing is asked there.
---@param enabled boolean|nil
---@param bufnr integer|nil
function M.toggle_buffer(enabled, bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  if enabled == nil then
    enabled = vim.b[bufnr].spec_lsp_enabled == false
  end
  vim.b[bufnr].spec_lsp_enabled = enabled
  if not enabled and suggestion.ui then
    suggestion.ui.hide(bufnr)
  end
  pcall(vim.cmd.redrawstatus)
  local msg = ("spec-lsp: suggestions %s in this buffer"):format(enabled and "on" or "off")
  if enabled and not M.enabled then
    msg = msg .. " (off everywhere: :SpecLsp toggle)"
  end
  vim.notify(msg, vim.log.levels.INFO)
end

--- `:SpecLsp toggle|enable|disable [buffer]`: `on` true, false or nil (flip).
---@param on boolean|nil
---@param scope string|nil  "buffer", or nil for every buffer
local function switch(on, scope)
  if scope == "buffer" then
    M.toggle_buffer(on)
  elseif scope ~= nil then
    local msg = ("spec-lsp: expected `buffer` or nothing, not %q"):format(scope)
    vim.notify(msg, vim.log.levels.ERROR)
  elseif on == nil then
    M.toggle()
  else
    M.toggle(on)
  end
end

--- Turn next edit suggestions on or off (nil: flip), `:SpecLsp nextedit on|off`.
---@param enabled boolean|nil
function M.nextedit_toggle(enabled)
  nextedit.enable(enabled)
  local state = nextedit.enabled and "on" or "off"
  vim.notify("spec-lsp: next edit " .. state, vim.log.levels.INFO)
end

--- Restart the server under `spec-lsp record --out {path}` (no path: stop recording).
---@param path string|nil
function M.record(path)
  lsp.record(path)
  if lsp.recording then
    vim.notify("spec-lsp: recording to " .. lsp.recording, vim.log.levels.INFO)
  else
    vim.notify("spec-lsp: recording stopped", vim.log.levels.INFO)
  end
end

--- Show the server's stats in a float; `callback(stats)` gets the raw answer.
---@param callback fun(stats: table|nil, err: string|nil)|nil
function M.stats(callback)
  require("spec_lsp.stats").show(callback)
end

--- `:SpecLsp status`: the server's model, state and last error, as a message.
function M.status()
  status.refresh(lsp.client(), function(s, err)
    local lines = s and status.describe(s) or { "spec-lsp: " .. tostring(err) }
    vim.notify(table.concat(lines, "\n"), vim.log.levels.INFO)
  end)
end

--- `:SpecLsp log`: the server's log file in a split (its `--log-file`, else Neovim's LSP log).
function M.log()
  vim.cmd("split " .. vim.fn.fnameescape(lsp.log_file()))
end

--- `:SpecLsp {sub}`: each subcommand and what it runs.
local subcommands = {
  status = M.status,
  restart = function()
    lsp.restart()
  end,
  log = M.log,
  toggle = function(arg)
    switch(nil, arg)
  end,
  enable = function(arg)
    switch(true, arg)
  end,
  disable = function(arg)
    switch(false, arg)
  end,
  stats = function()
    M.stats()
  end,
  record = function(arg)
    M.record(arg)
  end,
  nextedit = function(arg)
    if arg ~= nil and arg ~= "on" and arg ~= "off" then
      vim.notify(("spec-lsp: :SpecLsp nextedit on|off, not %q"):format(arg), vim.log.levels.ERROR)
      return
    end
    M.nextedit_toggle(arg == nil and nil or arg == "on")
  end,
}

local function create_commands()
  api.nvim_create_user_command("SpecLsp", function(cmd)
    local sub, arg = cmd.fargs[1], cmd.fargs[2]
    local run = subcommands[sub or ""]
    if not run then
      local names = table.concat(vim.tbl_keys(subcommands), "|")
      local msg = ("spec-lsp: :SpecLsp %s, not %q"):format(names, tostring(sub))
      vim.notify(msg, vim.log.levels.ERROR)
      return
    end
    run(arg)
  end, {
    nargs = "+",
    desc = "spec-lsp: status, restart, log, toggle|enable|disable [buffer], stats, record [file], "
      .. "nextedit [on|off]",
    complete = function(lead, line)
      if line:match("^%s*%S+%s+record%s+") then
        return vim.fn.getcompletion(lead, "file")
      end
      local names = line:match("^%s*%S+%s+nextedit%s+") and { "on", "off" }
        or line:match("^%s*%S+%s+%a+able%s+") and { "buffer" }
        or line:match("^%s*%S+%s+toggle%s+") and { "buffer" }
        or vim.tbl_keys(subcommands)
      table.sort(names)
      return vim.tbl_filter(function(n)
        return vim.startswith(n, lead)
      end, names)
    end,
  })
  api.nvim_create_user_command("SpecLspStats", function()
    M.stats()
  end, { desc = "Show spec-lsp's stats in a float (also :SpecLsp stats)" })
  api.nvim_create_user_command("SpecLspToggle", function()
    M.toggle()
  end, { desc = "Turn spec-lsp suggestions on or off (also :SpecLsp toggle)" })
  api.nvim_create_user_command("SpecLspRecord", function(cmd)
    M.record(cmd.args)
  end, {
    nargs = "?",
    complete = "file",
    desc = "Record this session for `spec-lsp replay` (no file: stop recording)",
  })
end

--- Set spec-lsp up; `opts` is merged over the defaults in `spec_lsp.config`.
---@param opts spec_lsp.Config|table|nil
function M.setup(opts)
  config.options = config.merge(opts)
  suggestion.use(config.resolve_ui(config.options))
  api.nvim_set_hl(0, "SpecLspSuggestion", { link = "Comment", default = true })
  nextedit.setup()
  local group = api.nvim_create_augroup("spec_lsp", { clear = true })
  gate.on_menu_open(group, function(bufnr)
    if suggestion.ui and suggestion.visible(bufnr) then
      suggestion.ui.hide(bufnr)
    end
  end)
  api.nvim_create_autocmd("FileType", {
    group = group,
    callback = function(ev)
      if lsp.wants(ev.buf) then
        lsp.attach(ev.buf)
      end
    end,
  })
  api.nvim_create_autocmd("LspAttach", {
    group = group,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if client and client.name == lsp.name then
        on_attach(client, ev.buf)
      end
    end,
  })
  api.nvim_create_autocmd("LspProgress", {
    group = group,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      local value = ev.data.params and ev.data.params.value
      if client and client.name == lsp.name and type(value) == "table" then
        status.on_progress(value)
        if value.kind == "end" then
          status.refresh(client)
        end
      end
    end,
  })
  api.nvim_create_autocmd("LspDetach", {
    group = group,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if client and client.name == lsp.name then
        suggestion.ui.detach(ev.buf)
        nextedit.detach(ev.buf)
        cursor.detach(ev.buf)
        definitions.detach(ev.buf)
      end
    end,
  })
  create_commands()
  M.did_setup = true
  lsp.attach_all()
end

return M
