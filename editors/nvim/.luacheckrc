-- luacheck config for the spec-lsp Neovim plugin and its test helpers.
std = "luajit"
globals = { "vim" }
max_line_length = 100
max_code_line_length = 100
max_comment_line_length = 120
ignore = { "212/self" }
