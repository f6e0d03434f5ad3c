-- The short path, for the real bundled model: type a function header, wait for ghost text,
-- accept it all, and read the server's stats.
local api = vim.api

return function(R, spec)
  local ns = api.nvim_create_namespace(spec.namespace)
  vim.cmd.edit(vim.fn.fnameescape(spec.file))
  local bufnr = api.nvim_get_current_buf()
  local client, status = R.wait_ready(bufnr, spec.ready_timeout_ms)
  R.observe("status", status)

  R.step("type " .. spec.typed)
  R.feed("Go")
  R.type(bufnr, spec.typed)
  local ghost = R.wait(spec.ghost_timeout_ms, "ghost text at the cursor", function()
    local g = R.ghost(bufnr, ns)
    local cursor = api.nvim_win_get_cursor(0)
    return g and g.text ~= "" and g.row == cursor[1] - 1 and g.col == cursor[2] and g or nil
  end)
  R.step("accept")
  R.accept_all(bufnr, ghost)
  R.observe("stats", R.request(client, "spec-lsp/stats"))
  vim.cmd("stopinsert")
end
