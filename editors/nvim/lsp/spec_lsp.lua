--- spec-lsp as a native LSP config (Neovim 0.11+), for those who skip the plugin's setup{}:
---
---   vim.lsp.enable("spec_lsp")
---   vim.lsp.inline_completion.enable()      -- Neovim 0.12: the ghost text
---   vim.lsp.config("spec_lsp", { init_options = { preset = "bundled" } })  -- to change a field
---
--- The server command is the plugin's default (`spec-lsp serve` from PATH, else this checkout's
--- `.venv`; never a project's own `.venv`), started in the home folder. Use either this or
--- `require("spec_lsp").setup{}`, not both: both name their client `spec_lsp`.

---@type vim.lsp.Config
return {
  cmd = require("spec_lsp.lsp").default_cmd(),
  cmd_cwd = require("spec_lsp.lsp").neutral_cwd(), -- the home folder, never the workspace
  root_markers = { ".git", "pyproject.toml", "package.json", "Cargo.toml", "go.mod" },
  init_options = vim.empty_dict(), -- {} on the wire: the server's defaults
  capabilities = { textDocument = { inlineCompletion = { dynamicRegistration = false } } },
}
