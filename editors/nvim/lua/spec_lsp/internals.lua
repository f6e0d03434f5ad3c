--- The one door to Neovim internals the built-in ui (ui/builtin.lua) relies on: nothing else in
--- the plugin names them. `vim.lsp.inline_completion` (0.12) has no public way to hear of its
--- answers, nor to ask again at once, so spec-lsp uses three things Neovim does not promise:
---
---   * the namespace its ghost text is drawn in, `nvim.lsp.inline_completion`;
---   * the per-instance `client.request`: its requests go through `client:request(...)`, so a
---     function stored on the client instance sees them (and their answers) first;
---   * its per-buffer augroup `nvim.lsp.inline_completion:<bufnr>`, whose CursorMovedI autocmd
---     asks again (after its own debounce).
---
--- `check(bufnr, client)` says which of them is missing; tests/editors/test_nvim.py runs it against
--- the Neovim it tests (and `:checkhealth spec_lsp` on yours), so a Neovim that changes them fails
--- loudly instead of silently losing the shown/accept reports and the next/prev keys.

local api = vim.api

local M = {}

--- The namespace of Neovim 0.12's own ghost text.
M.namespace_name = "nvim.lsp.inline_completion"
M.namespace = api.nvim_create_namespace(M.namespace_name)

---@param bufnr integer
---@return string
local function augroup_name(bufnr)
  return "nvim.lsp.inline_completion:" .. bufnr
end

--- Route `client`'s requests through `wrap(request, self, method, params, handler, bufnr)`,
--- where `request` is the client's own method. Once per client.
---@param client vim.lsp.Client
---@param wrap fun(request: function, self: vim.lsp.Client, method: string, params: any,
---  handler: function|nil, bufnr: integer|nil): boolean, integer|nil
function M.wrap_request(client, wrap)
  if client._spec_lsp_wrapped then
    return
  end
  client._spec_lsp_wrapped = true
  local request = client.request
  client.request = function(self, method, params, handler, bufnr)
    return wrap(request, self, method, params, handler, bufnr)
  end
end

--- Have Neovim ask for an inline completion in `bufnr` again (after its debounce).
---@param bufnr integer
---@return boolean asked  false when the augroup is not there (another Neovim, or not enabled)
function M.ask_again(bufnr)
  return pcall(api.nvim_exec_autocmds, "CursorMovedI", { group = augroup_name(bufnr) })
end

--- What is missing of the internals, for `bufnr` with inline completion enabled for `client`:
--- an empty list when all are there.
---@param bufnr integer
---@param client vim.lsp.Client
---@return string[] problems
function M.check(bufnr, client)
  local problems = {}
  local ic = vim.lsp.inline_completion
  if type(ic) ~= "table" then
    return { "vim.lsp.inline_completion is missing" }
  end
  for _, name in ipairs({ "enable", "get", "select" }) do
    if type(ic[name]) ~= "function" then
      problems[#problems + 1] = "vim.lsp.inline_completion." .. name .. " is missing"
    end
  end
  if type(client.request) ~= "function" then
    problems[#problems + 1] = "client.request is not a function"
  end
  local ok, cmds = pcall(api.nvim_get_autocmds, { group = augroup_name(bufnr) })
  local asks = false
  for _, cmd in ipairs(ok and cmds or {}) do
    asks = asks or cmd.event == "CursorMovedI"
  end
  if not asks then
    problems[#problems + 1] = ("no CursorMovedI autocmd in the augroup %q"):format(
      augroup_name(bufnr)
    )
  end
  return problems
end

return M
