-- No setup{}: lsp/spec_lsp.lua through `vim.lsp.enable("spec_lsp")`, against the in-process
-- stand-in server, keeps to the plugin's filetype rules: a git commit message and a buffer whose
-- filetype is help get no client, a Python file does.
local api = vim.api

return function(R, spec)
  local server = require("spec_lsp_test.mock_server").new()
  vim.lsp.config("spec_lsp", { cmd = server.cmd })
  vim.lsp.enable("spec_lsp")
  local dir = vim.fs.dirname(spec.file)

  vim.cmd.edit(vim.fn.fnameescape(dir .. "/COMMIT_EDITMSG"))
  local commit = api.nvim_get_current_buf()
  local help = api.nvim_create_buf(true, false) -- a file buffer whose only filetype is help
  api.nvim_buf_set_name(help, dir .. "/guide.txt")
  api.nvim_set_current_buf(help)
  vim.bo[help].filetype = "help"
  -- Neovim starts a client on a scheduled callback: once the Python file (opened last) has its
  -- client, the earlier buffers' turns have come and gone.
  vim.cmd.edit(vim.fn.fnameescape(spec.file))
  local python = api.nvim_get_current_buf()
  R.wait(30000, "the client on the Python file", function()
    return R.client(python)
  end)
  R.observe("native_filetypes", {
    commit_filetype = vim.bo[commit].filetype,
    commit_attached = R.client(commit) ~= nil,
    help_attached = R.client(help) ~= nil,
    python_attached = true,
  })
end
