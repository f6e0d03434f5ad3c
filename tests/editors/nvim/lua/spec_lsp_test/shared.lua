-- A shared server (`spec-lsp serve --tcp`, started by pytest): the plugin connects with the token
-- and suggestions come as from a server it started itself.
local api = vim.api

return function(R, spec)
  local ns = api.nvim_create_namespace(spec.namespace)
  vim.cmd.edit(vim.fn.fnameescape(spec.file))
  local bufnr = api.nvim_get_current_buf()
  local client, status = R.wait_ready(bufnr, spec.ready_timeout_ms)
  R.observe("status", status)
  R.observe("cmd_is_connect", type(client.config.cmd) == "function")
  R.feed("Go")
  R.type(bufnr, spec.typed)
  local ghost = R.wait(spec.ghost_timeout_ms, "ghost text from the shared server", function()
    local g = R.ghost(bufnr, ns)
    return g and g.text ~= "" and g or nil
  end)
  R.accept_all(bufnr, ghost)
  R.observe("stats", R.request(client, "spec-lsp/stats"))
  R.feed("<Esc>")
end
