--- spec-lsp as a native LSP config (Neovim 0.11+), for those who skip the plugin's setup{}:
---
---   vim.lsp.enable("spec_lsp")
---   vim.lsp.inline_completion.enable()      -- Neovim 0.12: the ghost text
---   vim.lsp.config("spec_lsp", { init_options = { preset = "bundled" } })  -- to change a field
---
--- The server command is the plugin's default (`spec-lsp serve` from PATH, else this checkout's
--- `.venv`; never a project's own `.venv`), started in the home folder. It attaches to the buffers
--- the plugin would (`require("spec_lsp.lsp").wants`: every file buffer's filetype except the
--- plugin's `exclude_filetypes`, help and commit messages among them); a `filetypes` list set with
--- vim.lsp.config narrows that. Use either this or `require("spec_lsp").setup{}`, not both: both
--- name their client `spec_lsp`.

local lsp = require("spec_lsp.lsp")

local root_markers = { ".git", "pyproject.toml", "package.json", "Cargo.toml", "go.mod" }

---@type vim.lsp.Config
return {
  cmd = lsp.default_cmd(),
  cmd_cwd = lsp.neutral_cwd(), -- the home folder, never the workspace
  root_markers = root_markers, -- read by root_dir below (Neovim reads it only without one)
  --- The plugin's filetype rules; the project root from `root_markers`, else the current folder.
  ---@param bufnr integer
  ---@param on_dir fun(root: string)
  root_dir = function(bufnr, on_dir)
    if not lsp.wants(bufnr) then
      return
    end
    local markers = (vim.lsp.config.spec_lsp or {}).root_markers or root_markers
    on_dir(vim.fs.root(bufnr, markers) or vim.fn.getcwd())
  end,
  init_options = vim.empty_dict(), -- {} on the wire: the server's defaults
  capabilities = { textDocument = { inlineCompletion = { dynamicRegistration = false } } },
}
