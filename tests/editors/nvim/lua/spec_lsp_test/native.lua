-- No setup{}: the plugin's lsp/spec_lsp.lua through Neovim's own `vim.lsp.enable("spec_lsp")`,
-- with only the command changed by `vim.lsp.config`, and Neovim's own inline completion.
local api = vim.api

return function(R, spec)
  vim.lsp.config("spec_lsp", { cmd = spec.cmd, init_options = { maxTokens = 8 } })
  vim.lsp.enable("spec_lsp")
  vim.lsp.inline_completion.enable()
  local ns = api.nvim_create_namespace(spec.namespace)
  vim.cmd.edit(vim.fn.fnameescape(spec.file))
  local bufnr = api.nvim_get_current_buf()
  local _, status = R.wait_ready(bufnr, spec.ready_timeout_ms)
  R.observe("status", status)
  R.observe("config_cmd", vim.lsp.config.spec_lsp.cmd)
  R.feed("Go")
  R.type(bufnr, spec.typed)
  local ghost = R.wait(spec.ghost_timeout_ms, "Neovim's own ghost text", function()
    local g = R.ghost(bufnr, ns)
    return g and g.text ~= "" and g or nil
  end)
  R.observe("ghost", ghost.text)
  R.feed("<Esc>")
end
