--- Whether spec-lsp may ask for and show a suggestion in a buffer now: suggestions on (`:SpecLsp
--- toggle`), on in this buffer (`vim.b.spec_lsp_enabled`, `:SpecLsp toggle buffer`), and, with
--- `hide_during_completion`, no completion menu open (Neovim's popup menu, nvim-cmp's, blink's).
--- Both uis ask it before each request and when an answer comes; knows nothing of how they draw.

local api = vim.api
local config = require("spec_lsp.config")

local M = {}

--- Suggestions on in this Neovim (`:SpecLsp toggle`).
M.enabled = true

--- Whether the buffer's own switch is on: `vim.b[bufnr].spec_lsp_enabled` not false (nil or true:
--- on). Next edits follow it too.
---@param bufnr integer
---@return boolean
function M.buffer_on(bufnr)
  return api.nvim_buf_is_valid(bufnr) and vim.b[bufnr].spec_lsp_enabled ~= false
end

--- Whether suggestions are on in `bufnr`: on in this Neovim, and on in the buffer.
---@param bufnr integer
---@return boolean
function M.buffer_enabled(bufnr)
  return M.enabled and M.buffer_on(bufnr == 0 and api.nvim_get_current_buf() or bufnr)
end

--- A completion plugin's "is its menu open", if the plugin is loaded and says.
---@param module string
---@param names string[]  functions that answer it, newest API first
---@return boolean
local function plugin_menu(module, names)
  local plugin = package.loaded[module]
  if type(plugin) ~= "table" then
    return false
  end
  for _, name in ipairs(names) do
    if type(plugin[name]) == "function" then
      local ok, open = pcall(plugin[name])
      return ok and open == true
    end
  end
  return false
end

--- Whether a completion menu is open: Neovim's popup menu (`pumvisible()`, `complete_info()`),
--- nvim-cmp's (`require("cmp").visible()`) or blink.cmp's (`is_menu_visible()`).
---@return boolean
function M.menu_open()
  if vim.fn.pumvisible() == 1 or vim.fn.complete_info({ "pum_visible" }).pum_visible == 1 then
    return true
  end
  return plugin_menu("cmp", { "visible" })
    or plugin_menu("blink.cmp", { "is_menu_visible", "is_visible" })
end

--- Whether a suggestion may be asked for or shown in `bufnr` now.
---@param bufnr integer
---@return boolean
function M.allows(bufnr)
  if not M.buffer_enabled(bufnr) then
    return false
  end
  return not (config.options.hide_during_completion and M.menu_open())
end

local cmp_hooked = false

--- Call `fn(bufnr)` when a completion menu opens: Neovim's (CompleteChanged), blink.cmp's (its
--- User BlinkCmpMenuOpen event), nvim-cmp's (its `menu_opened` event, once cmp is loaded).
---@param group integer  the augroup the autocmds go in
---@param fn fun(bufnr: integer)
function M.on_menu_open(group, fn)
  local function opened()
    if config.options.hide_during_completion then
      fn(api.nvim_get_current_buf())
    end
  end
  api.nvim_create_autocmd("CompleteChanged", { group = group, callback = opened })
  api.nvim_create_autocmd("User", {
    group = group,
    pattern = "BlinkCmpMenuOpen",
    callback = opened,
  })
  api.nvim_create_autocmd("InsertEnter", { -- nvim-cmp is often loaded on the first InsertEnter
    group = group,
    callback = function()
      local cmp = package.loaded.cmp
      if cmp_hooked or type(cmp) ~= "table" or type(cmp.event) ~= "table" then
        return
      end
      cmp_hooked = pcall(function()
        cmp.event:on("menu_opened", opened)
      end)
    end,
  })
end

return M
