--- How much of a suggestion a partial accept takes, and lengths in the units the server counts.
--- Pure string functions: no buffers, no LSP.

local M = {}

--- The suggestion up to the end of its next word: leading blanks, then a run of word characters,
--- or else a run of other non-blank characters. A leading newline counts as the word.
---@param text string
---@return string
function M.next_word(text)
  if text:sub(1, 1) == "\n" then
    return "\n"
  end
  local blanks = text:match("^[ \t]*")
  local rest = text:sub(#blanks + 1)
  local word = rest:match("^[%w_\128-\255]+") or rest:match("^[^%w_%s\128-\255]+") or ""
  return blanks .. word
end

--- The suggestion up to the end of its current line (without the newline). When the suggestion
--- starts with a newline, that newline and the next line.
---@param text string
---@return string
function M.next_line(text)
  local start = text:sub(1, 1) == "\n" and 2 or 1
  local nl = text:find("\n", start, true)
  return nl and text:sub(1, nl - 1) or text
end

--- Length of `s` in UTF-16 code units (the unit of `acceptedLength`).
---@param s string
---@return integer
function M.utf16_len(s)
  local ok, n = pcall(vim.str_utfindex, s, "utf-16")
  if ok and type(n) == "number" then
    return n
  end
  local _, n16 = vim.str_utfindex(s) -- Neovim 0.10 returns (utf-32, utf-16)
  return n16
end

return M
