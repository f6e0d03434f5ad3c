--- Options for spec-lsp: annotated defaults, merged under the user's `setup{}` table.
--- This module owns the option names and their checks; it knows nothing about LSP clients.

local M = {}

---@class spec_lsp.Keys
---@field accept string|false       accept the whole suggestion (falls back to the key itself)
---@field accept_word string|false  accept the suggestion up to the end of its next word
---@field accept_line string|false  accept the suggestion up to the end of its current line
---@field dismiss string|false      hide the suggestion until the next edit
---@field next string|false         show the next suggestion
---@field prev string|false         show the previous suggestion
---@field trigger string|false      ask for a suggestion here (the way to get one with auto_trigger off)

---@class spec_lsp.NextEdit
---@field enabled boolean      ask for next edits (`:SpecLsp nextedit on|off` at run time)
---@field idle_ms integer      how long the buffer and the cursor rest before a request
---@field in_insert boolean    also ask (and show) in insert mode; false: normal mode only
---@field accept string|false  jump to the next edit, then accept it (normal mode, and insert mode
---                            when no completion is shown); else what the key did before
---@field dismiss string|false  hide the next edit (normal mode; insert mode too unless <Esc>)

---@class spec_lsp.Server
---@field tcp string|nil          HOST:PORT of a shared `spec-lsp serve --tcp HOST:PORT`
---@field socket string|nil       path of a shared `spec-lsp serve --socket PATH`
---@field token string|nil        the server's token
---@field token_file string|nil   a file holding it; default: $SPEC_LSP_TOKEN, else the file
---                               `spec-lsp serve --tcp` writes ($XDG_RUNTIME_DIR/spec-lsp/PORT.token)

---@class spec_lsp.Config
---@field cmd string[]|nil          server command; nil: `spec-lsp serve` from PATH, else the
---                                 `.venv` of the checkout this plugin lives in
---@field server spec_lsp.Server|nil  connect to a shared server instead of starting one
---@field shared_server boolean     one server for all of your Neovims: connect to the one at
---                                 $XDG_RUNTIME_DIR/spec-lsp/shared.sock, started (`cmd`) on first use
---@field workspace_venv boolean    also try `<project root>/.venv/bin/spec-lsp` (runs that project's code)
---@field filetypes string[]        filetypes to attach to; `{ "*" }` for every file buffer
---@field exclude_filetypes string[]  filetypes never attached to, even with `"*"`
---@field should_attach (fun(bufnr: integer, client: vim.lsp.Client|nil): boolean)|nil  after the
---                                 filetype rules, whether to attach `bufnr` (`client`: the running
---                                 spec-lsp client, nil before the first buffer starts it)
---@field auto_trigger boolean      suggest while typing; false: only on the `trigger` key
---@field hide_during_completion boolean  no ghost text while a completion menu is open (Neovim's
---                                 popup menu, nvim-cmp's, blink.cmp's)
---@field keys spec_lsp.Keys        insert-mode keys; `false` leaves a key unmapped
---@field init_options table        server options (docs/protocol.md), sent as initializationOptions
---@field ui "auto"|"builtin"|"virtual_text"  auto: `vim.lsp.inline_completion` on 0.12+, else own virtual text
---@field debounce_ms integer       delay before a request (virtual_text ui only; builtin uses Neovim's)
---@field root_markers string[]     files marking the project root given to the server
---@field hl_group string           highlight of the suggestion text (virtual_text ui only)
---@field next_edit spec_lsp.NextEdit  next edit suggestions (`textDocument/copilotInlineEdit`)
---@field editor_definitions boolean  at a pause, ask the buffer's other language servers for the
---                                 definitions (and hover) of the names near the cursor and send
---                                 them to spec-lsp for its prompts (`spec-lsp/definitions`)

---@type spec_lsp.Config
M.defaults = {
  cmd = nil,
  server = nil,
  shared_server = false,
  workspace_venv = false,
  filetypes = { "*" },
  exclude_filetypes = { "help", "gitcommit", "gitrebase", "hgcommit", "svn", "cvs" },
  should_attach = nil,
  auto_trigger = true,
  hide_during_completion = true,
  keys = {
    accept = "<Tab>",
    accept_word = "<M-Right>",
    accept_line = "<M-Down>",
    dismiss = "<C-]>",
    next = "<M-]>",
    prev = "<M-[>",
    trigger = "<M-\\>",
  },
  init_options = {},
  ui = "auto",
  debounce_ms = 75,
  root_markers = { ".git", "pyproject.toml", "package.json", "Cargo.toml", "go.mod" },
  hl_group = "SpecLspSuggestion",
  next_edit = {
    enabled = true,
    idle_ms = 400,
    in_insert = false,
    accept = "<Tab>",
    dismiss = "<Esc>",
  },
  editor_definitions = false,
}

---@type spec_lsp.Config
M.options = vim.deepcopy(M.defaults)

local function is_key(v)
  return v == false or type(v) == "string"
end

local checks = {
  cmd = function(v)
    return v == nil or (vim.islist(v) and #v > 0), "a non-empty list of strings"
  end,
  server = function(v)
    if v == nil then
      return true
    end
    local ok = type(v) == "table"
      and (type(v.tcp) == "string") ~= (type(v.socket) == "string")
      and (v.tcp == nil or v.tcp:match("^%[?[^%]]*%]?:%d+$") ~= nil)
      and (v.token == nil or type(v.token) == "string")
      and (v.token_file == nil or type(v.token_file) == "string")
    return ok, "{ tcp = \"HOST:PORT\" } or { socket = PATH }, with an optional token or token_file"
  end,
  shared_server = function(v)
    return type(v) == "boolean", "true or false"
  end,
  workspace_venv = function(v)
    return type(v) == "boolean", "true or false"
  end,
  filetypes = function(v)
    return vim.islist(v), "a list of filetypes"
  end,
  exclude_filetypes = function(v)
    return vim.islist(v), "a list of filetypes"
  end,
  should_attach = function(v)
    return v == nil or vim.is_callable(v), "a function(bufnr, client) returning true or false"
  end,
  auto_trigger = function(v)
    return type(v) == "boolean", "true or false"
  end,
  hide_during_completion = function(v)
    return type(v) == "boolean", "true or false"
  end,
  keys = function(v)
    if type(v) ~= "table" then
      return false, "a table"
    end
    for name, key in pairs(v) do
      if M.defaults.keys[name] == nil or not is_key(key) then
        return false, ("known key names (%s) mapped to a key string or false"):format(
          table.concat(vim.tbl_keys(M.defaults.keys), ", ")
        )
      end
    end
    return true
  end,
  init_options = function(v)
    return type(v) == "table", "a table"
  end,
  ui = function(v)
    local ok = v == "auto" or v == "builtin" or v == "virtual_text"
    return ok, '"auto", "builtin" or "virtual_text"'
  end,
  debounce_ms = function(v)
    return type(v) == "number" and v >= 0, "a number >= 0"
  end,
  root_markers = function(v)
    return vim.islist(v), "a list of file names"
  end,
  hl_group = function(v)
    return type(v) == "string", "a highlight group name"
  end,
  editor_definitions = function(v)
    return type(v) == "boolean", "true or false"
  end,
  next_edit = function(v)
    local expected = "a table of enabled (boolean), idle_ms (number >= 0), in_insert (boolean), "
      .. "accept and dismiss (a key string or false)"
    if type(v) ~= "table" then
      return false, expected
    end
    local valid = {
      enabled = function(x)
        return type(x) == "boolean"
      end,
      idle_ms = function(x)
        return type(x) == "number" and x >= 0
      end,
      in_insert = function(x)
        return type(x) == "boolean"
      end,
      accept = is_key,
      dismiss = is_key,
    }
    for name, value in pairs(v) do
      if not valid[name] or not valid[name](value) then
        return false, expected
      end
    end
    return true
  end,
}

--- Options whose table is merged over the default table, not put in its place.
local merged_tables = { keys = true, next_edit = true }

--- Merge `user` over the defaults. A bad or unknown option is reported once and its default kept.
---@param user table|nil
---@return spec_lsp.Config
function M.merge(user)
  local merged = vim.deepcopy(M.defaults)
  for name, value in pairs(user or {}) do
    local check = checks[name]
    if not check then
      vim.notify(("spec-lsp: unknown option %q ignored"):format(name), vim.log.levels.WARN)
    else
      local ok, expected = check(value)
      if ok then
        merged[name] = type(value) == "table" and merged_tables[name]
            and vim.tbl_extend("force", merged[name], value)
          or value
      else
        vim.notify(
          ("spec-lsp: option %q must be %s; using the default"):format(name, expected),
          vim.log.levels.WARN
        )
      end
    end
  end
  return merged
end

--- Which suggestion ui runs on this Neovim.
---@param opts spec_lsp.Config
---@return "builtin"|"virtual_text"
function M.resolve_ui(opts)
  local has_builtin = vim.fn.has("nvim-0.12") == 1
  if opts.ui == "builtin" and not has_builtin then
    local msg = "spec-lsp: ui = 'builtin' needs Neovim 0.12; using virtual_text"
    vim.notify(msg, vim.log.levels.WARN)
    return "virtual_text"
  end
  if opts.ui == "auto" then
    return has_builtin and "builtin" or "virtual_text"
  end
  return opts.ui --[[@as "builtin"|"virtual_text"]]
end

return M
