--- spec-lsp for Neovim: inline completions (ghost text) from the spec-lsp language server.
---
---   require("spec_lsp").setup({ init_options = { preset = "coder" } })
---
--- This module wires the parts together: options (config), the client (lsp), keys and accepts
--- (suggestion), the ghost text itself (ui.builtin on 0.12+, ui.virtual_text on 0.11), the
--- commands, and `:checkhealth spec_lsp` (health).

local api = vim.api
local config = require("spec_lsp.config")
local lsp = require("spec_lsp.lsp")
local suggestion = require("spec_lsp.suggestion")

local M = {}

M.did_setup = false
M.enabled = true

--- Accept the suggestion on screen ("all", "word" or "line"); false when there is none.
M.accept = suggestion.accept
M.dismiss = suggestion.dismiss
M.select = suggestion.select
M.visible = suggestion.visible

---@param client vim.lsp.Client
---@param bufnr integer
local function on_attach(client, bufnr)
  suggestion.ui.attach(bufnr, client)
  suggestion.ui.enable(client, M.enabled)
  suggestion.map_keys(bufnr)
end

--- Turn suggestions on or off (nil: flip), in this Neovim and in the server.
---@param enabled boolean|nil
function M.toggle(enabled)
  if enabled == nil then
    enabled = not M.enabled
  end
  M.enabled = enabled
  local client = lsp.client()
  if client then
    suggestion.ui.enable(client, enabled)
    lsp.configure({ enabled = enabled })
  end
  vim.notify("spec-lsp: suggestions " .. (enabled and "on" or "off"), vim.log.levels.INFO)
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

local function create_commands()
  api.nvim_create_user_command("SpecLspStats", function()
    M.stats()
  end, { desc = "Show spec-lsp's stats in a float" })
  api.nvim_create_user_command("SpecLspToggle", function()
    M.toggle()
  end, { desc = "Turn spec-lsp suggestions on or off" })
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
  local group = api.nvim_create_augroup("spec_lsp", { clear = true })
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
  api.nvim_create_autocmd("LspDetach", {
    group = group,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if client and client.name == lsp.name then
        suggestion.ui.detach(ev.buf)
      end
    end,
  })
  create_commands()
  M.did_setup = true
  lsp.attach_all()
end

return M
