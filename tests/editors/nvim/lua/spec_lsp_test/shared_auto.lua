-- `shared_server = true`: the plugin connects to the user's shared server, starting it on first
-- use. pytest runs two of these Neovims at once: each waits until both are connected to one
-- server, then completes in its own buffer.
local api = vim.api

return function(R, spec)
  local ns = api.nvim_create_namespace(spec.namespace)
  vim.cmd.edit(vim.fn.fnameescape(spec.file))
  local bufnr = api.nvim_get_current_buf()
  local client = R.wait_ready(bufnr, spec.ready_timeout_ms)
  R.observe("cmd_is_connect", type(client.config.cmd) == "function")
  R.observe("socket", require("spec_lsp.shared").socket_path())
  local both = R.wait(spec.ready_timeout_ms, "the other Neovim on the same server", function()
    local status = R.request(client, "spec-lsp/status")
    return status and status.clients >= 2 and status or nil
  end)
  R.observe("status", both)
  R.feed("Go")
  R.type(bufnr, spec.typed)
  local ghost = R.wait(spec.ghost_timeout_ms, "ghost text from the shared server", function()
    local g = R.ghost(bufnr, ns)
    return g and g.text ~= "" and g or nil
  end)
  R.accept_all(bufnr, ghost)
  R.observe("stats", R.request(client, "spec-lsp/stats"))
  R.observe("session", R.request(client, "spec-lsp/status").session)
  R.feed("<Esc>")
  -- stay connected until the other Neovim has completed too (its wait above sees both)
  vim.fn.writefile({ "done" }, spec.done_file)
  R.wait(spec.ready_timeout_ms, "the other Neovim's completion", function()
    return vim.uv.fs_stat(spec.other_done) ~= nil
  end)
end
