-- spec-lsp does nothing until `require("spec_lsp").setup{...}`; see `:help spec_lsp`.
if vim.g.loaded_spec_lsp then
  return
end
vim.g.loaded_spec_lsp = true
