--- spec-lsp's keys over what the keys did before. A key runs spec-lsp's action when it has one to
--- do, else the mapping it had before (nvim-cmp's, blink's, a snippet plugin's <Tab>), else types
--- itself.
---
--- The mappings are plain (not `expr`) Lua callbacks, so the earlier mapping runs outside any
--- textlock: a non-expr callback that edits text (the usual snippet-jump map) runs as if its own
--- key had been pressed, instead of failing with E565 inside an expr mapping. The earlier mapping
--- is looked up when the key is pressed: a buffer-local one spec-lsp replaced (kept at attach),
--- else the global mapping as it is now, so a map set after attach is the one that runs.

local api = vim.api

local M = {}

---@type table<integer, table<string, table|false>>  bufnr -> slot -> the buffer-local mapping replaced
local saved = {}

--- One mapping of spec-lsp's: its desc, mode and key (two modules may map the same key in turn).
local function slot_of(desc, mode, lhs)
  return ("%s\0%s\0%s"):format(desc, mode, lhs)
end

---@param m table  a mapping as `maparg(..., true)` or `nvim_get_keymap` describe it
---@param code string  the key, through vim.keycode
---@return boolean
local function same_key(m, code)
  return m.lhsraw == code or m.lhsrawalt == code
end

--- The global mapping of `lhs` in `mode` now, if any.
---@param mode string
---@param lhs string
---@return table|nil
local function global_mapping(mode, lhs)
  local code = vim.keycode(lhs)
  for _, m in ipairs(api.nvim_get_keymap(mode)) do
    if same_key(m, code) then
      return m
    end
  end
end

--- Type `keys` ahead of what is still to be typed. A recursive mapping's keys may be mappings
--- too, except a leading `lhs` (as Vim does: `imap <Tab> <Tab>` types a Tab, it does not loop).
---@param keys string
---@param noremap boolean
---@param code string  the key itself, through vim.keycode
local function type_keys(keys, noremap, code)
  if keys == "" then
    return
  end
  if noremap then
    api.nvim_feedkeys(keys, "in", false)
  elseif vim.startswith(keys, code) then
    api.nvim_feedkeys(keys:sub(#code + 1), "im", false) -- "i": the last one fed comes first
    api.nvim_feedkeys(code, "in", false)
  else
    api.nvim_feedkeys(keys, "im", false)
  end
end

--- Run `prev` as its own key would have, now, outside any textlock.
---@param prev table  `maparg(lhs, mode, false, true)`
---@param code string
local function run_mapping(prev, code)
  local keys
  if prev.callback and prev.expr ~= 1 then
    prev.callback()
    return
  elseif prev.callback then
    keys = prev.callback()
    keys = type(keys) == "string" and keys or ""
  elseif prev.expr == 1 then
    keys = api.nvim_eval(prev.rhs)
  else
    keys = prev.rhs
  end
  if prev.expr ~= 1 or prev.replace_keycodes == 1 then
    keys = vim.keycode(keys)
  end
  type_keys(keys, prev.noremap == 1, code)
end

--- Do what `lhs` did before spec-lsp's mapping `desc` replaced it in `bufnr`.
---@param bufnr integer
---@param mode string
---@param lhs string
---@param desc string
local function fall_through(bufnr, mode, lhs, desc)
  local code = vim.keycode(lhs)
  local prev = saved[bufnr] and saved[bufnr][slot_of(desc, mode, lhs)] or global_mapping(mode, lhs)
  if prev then
    run_mapping(prev, code)
    return
  end
  local count = mode == "n" and vim.v.count > 0 and tostring(vim.v.count) or ""
  api.nvim_feedkeys(count .. code, "in", false)
end

--- Map `lhs` in `mode` for `bufnr`: `action()` runs, and when it returns false the key does what
--- it did before. `desc` names spec-lsp's mapping: one with the same desc found there (an earlier
--- attach's) is replaced without being kept as the earlier mapping.
---@param bufnr integer
---@param mode string
---@param lhs string
---@param desc string
---@param action fun(): boolean
function M.map(bufnr, mode, lhs, desc, action)
  saved[bufnr] = saved[bufnr] or {}
  local slot = slot_of(desc, mode, lhs)
  local prev = api.nvim_buf_call(bufnr, function()
    return vim.fn.maparg(lhs, mode, false, true)
  end)
  if prev.desc ~= desc then
    saved[bufnr][slot] = prev.buffer == 1 and prev or false
  end
  vim.keymap.set(mode, lhs, function()
    if not action() then
      fall_through(bufnr, mode, lhs, desc)
    end
  end, { buffer = bufnr, silent = true, desc = desc })
end

--- Remove from `bufnr` the mappings named by `descs` and put back the buffer-local mappings they
--- replaced (so that another module maps over what was there before spec-lsp).
---@param bufnr integer
---@param descs table<string, boolean>
function M.unmap(bufnr, descs)
  local slots = saved[bufnr]
  if not slots or not api.nvim_buf_is_valid(bufnr) then
    return
  end
  api.nvim_buf_call(bufnr, function()
    for slot, prev in pairs(slots) do
      local desc, mode, lhs = slot:match("^(.-)%z(.-)%z(.*)$")
      local now = vim.fn.maparg(lhs, mode, false, true)
      if descs[desc] and now.buffer == 1 and now.desc == desc then
        pcall(vim.keymap.del, mode, lhs, { buffer = bufnr })
        if prev then
          pcall(vim.fn.mapset, mode, false, prev)
        end
      end
      if descs[desc] then
        slots[slot] = nil
      end
    end
  end)
end

--- Forget what `bufnr`'s keys replaced (the buffer is gone).
---@param bufnr integer
function M.forget(bufnr)
  saved[bufnr] = nil
end

return M
