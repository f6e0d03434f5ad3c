--- The spec-lsp client: the server command, attaching buffers, talking to the server, and
--- restarting it (for example under `spec-lsp record`). Knows nothing about how suggestions show.

local config = require("spec_lsp.config")
local shared = require("spec_lsp.shared")

local M = {}

M.name = "spec_lsp"

---@type string|nil  file that `spec-lsp record` writes while recording; nil when not recording
M.recording = nil

-- editors/nvim, whose ../../.venv is the spec-lsp checkout's own environment
local plugin_root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h:h:h")

--- `spec-lsp serve` from PATH, else from this plugin's checkout's `.venv`. A project's own
--- `.venv/bin/spec-lsp` (`root`, or the current directory) only with `workspace_venv = true`: it
--- would run that project's code, so opening a repository must not start it.
---@param root string|nil
---@return string[]
function M.default_cmd(root)
  if vim.fn.executable("spec-lsp") == 1 then
    return { "spec-lsp", "serve" }
  end
  local roots = { plugin_root .. "/../.." }
  if config.options.workspace_venv then
    table.insert(roots, 1, root or vim.fn.getcwd())
  end
  for _, dir in ipairs(roots) do
    local exe = vim.fs.normalize(dir .. "/.venv/bin/spec-lsp")
    if vim.fn.executable(exe) == 1 then
      return { exe, "serve" }
    end
  end
  return { "spec-lsp", "serve" }
end

--- The token for a shared server: `server.token`, else `server.token_file`, else
--- $SPEC_LSP_TOKEN, else the file `spec-lsp serve --tcp` writes for its port; nil for a socket
--- without one (its permissions protect it).
---@param server spec_lsp.Server
---@return string|nil token, string|nil err
function M.token(server)
  if server.token then
    return server.token
  end
  local file = server.token_file and vim.fn.expand(server.token_file)
  if not file then
    local env = vim.env.SPEC_LSP_TOKEN
    if env and env ~= "" then
      return env
    end
    local port = server.tcp and server.tcp:match(":(%d+)$")
    if not port then
      return nil
    end
    local runtime = vim.env.XDG_RUNTIME_DIR
    local dir = (runtime and runtime ~= "") and (runtime .. "/spec-lsp")
      or (vim.fn.expand("~") .. "/.cache/spec-lsp/run")
    file = ("%s/%s.token"):format(dir, port)
  end
  local ok, lines = pcall(vim.fn.readfile, file)
  if not ok or not lines[1] then
    return nil, ("cannot read the token file %s"):format(file)
  end
  return vim.trim(lines[1])
end

--- What `vim.lsp.start` runs: a function connecting to a shared server (`server`, or the one
--- `shared_server` starts on first use), else the command.
---@param root string|nil
---@return string[]|fun(dispatchers: vim.lsp.rpc.Dispatchers): vim.lsp.rpc.PublicClient|nil
---@return string|nil err
function M.transport(root)
  local server = config.options.server
  if not server and config.options.shared_server then
    local path, err = shared.ensure(config.options.cmd or M.default_cmd(root), M.neutral_cwd())
    if not path then
      return nil, err
    end
    return vim.lsp.rpc.connect(path)
  end
  if not server then
    return M.server_cmd(root)
  end
  if server.socket then
    return vim.lsp.rpc.connect(vim.fn.expand(server.socket))
  end
  local host, port = server.tcp:match("^%[?([^%]]*)%]?:(%d+)$")
  return vim.lsp.rpc.connect(host ~= "" and host or "127.0.0.1", tonumber(port))
end

--- The command that starts the server now: the configured one, wrapped in `spec-lsp record`
--- while recording.
---@param root string|nil
---@return string[]
function M.server_cmd(root)
  local cmd = config.options.cmd or M.default_cmd(root)
  if not M.recording then
    return cmd
  end
  local exe = vim.fs.basename(cmd[1]) == "spec-lsp" and cmd[1] or M.default_cmd()[1]
  local v = vim.version()
  local source = ("neovim %d.%d.%d"):format(v.major, v.minor, v.patch)
  return vim.list_extend({ exe, "record", "--out", M.recording, "--source", source, "--" }, cmd)
end

--- Where the server starts: the home folder, never the workspace. An empty `PYTHONPATH` entry
--- names the working directory, and the interpreter imports a `sitecustomize.py` from it before
--- spec-lsp runs at all.
---@return string
function M.neutral_cwd()
  return vim.uv.os_homedir() or "/"
end

--- Whether spec-lsp should attach to this buffer: a file buffer whose filetype `filetypes` names
--- (or `"*"`) and `exclude_filetypes` does not, and then `should_attach(bufnr, client)` if set.
--- The plugin's setup{} and lsp/spec_lsp.lua (`vim.lsp.enable`) both ask this.
---@param bufnr integer
---@return boolean
function M.wants(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= "" then
    return false
  end
  local ft = vim.bo[bufnr].filetype
  local fts = config.options.filetypes
  if ft == "" or vim.list_contains(config.options.exclude_filetypes, ft) then
    return false
  end
  if not (vim.list_contains(fts, "*") or vim.list_contains(fts, ft)) then
    return false
  end
  local hook = config.options.should_attach
  if not hook then
    return true
  end
  local ok, yes = pcall(hook, bufnr, M.client())
  if not ok then
    vim.notify("spec-lsp: should_attach failed: " .. tostring(yes), vim.log.levels.ERROR)
  end
  return ok and yes and true or false
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  -- Neovim 0.11 does not announce inline completion; the virtual_text ui handles it.
  caps.textDocument.inlineCompletion = caps.textDocument.inlineCompletion
    or { dynamicRegistration = false }
  return caps
end

--- Start the server (once per Neovim) and attach `bufnr` to it.
---@param bufnr integer
---@return integer|nil client_id
function M.attach(bufnr)
  local root = vim.fs.root(bufnr, config.options.root_markers) or vim.fn.getcwd()
  local init = vim.deepcopy(config.options.init_options)
  if (config.options.server or config.options.shared_server) and M.recording then
    local msg = "spec-lsp: recording needs a server of this Neovim's own (not `server` or "
      .. "`shared_server`)"
    vim.notify(msg, vim.log.levels.WARN)
    M.recording = nil
  end
  if config.options.server then
    local token, err = M.token(config.options.server)
    if err then
      local msg = "spec-lsp: " .. err .. "; set server.token or server.token_file"
      vim.notify(msg, vim.log.levels.ERROR)
      return nil
    end
    init.token = token
  end
  local existing = M.client()
  local cmd, err
  if existing then -- reused below: nothing to start or connect
    cmd = existing.config.cmd
  else
    cmd, err = M.transport(root)
  end
  if not cmd then
    vim.notify("spec-lsp: " .. tostring(err), vim.log.levels.ERROR)
    return nil
  end
  return vim.lsp.start({
    name = M.name,
    cmd = cmd,
    cmd_cwd = M.neutral_cwd(),
    root_dir = root,
    init_options = next(init) and init or vim.empty_dict(), -- {} (not []) on the wire
    capabilities = capabilities(),
  }, {
    bufnr = bufnr,
    reuse_client = function(client, cfg)
      return client.name == cfg.name and not client:is_stopped()
    end,
  })
end

--- The running spec-lsp client, if any.
---@return vim.lsp.Client|nil
function M.client()
  for _, client in ipairs(vim.lsp.get_clients({ name = M.name })) do
    if not client:is_stopped() then
      return client
    end
  end
end

--- Attach every loaded buffer that spec-lsp wants.
function M.attach_all()
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and M.wants(bufnr) then
      M.attach(bufnr)
    end
  end
end

--- Stop the server and wait (bounded) until it has exited.
---@param timeout_ms integer|nil
function M.stop(timeout_ms)
  local clients = vim.lsp.get_clients({ name = M.name })
  for _, client in ipairs(clients) do
    client:stop()
  end
  local stopped = vim.wait(timeout_ms or 5000, function()
    for _, client in ipairs(clients) do
      if not client:is_stopped() then
        return false
      end
    end
    return true
  end, 20)
  if not stopped then
    for _, client in ipairs(clients) do
      client:stop(true)
    end
  end
end

--- Restart the server with the current command and re-attach the buffers.
function M.restart()
  M.stop()
  M.attach_all()
end

--- Record the session to `path` through `spec-lsp record` (nil or "": stop recording).
---@param path string|nil
function M.record(path)
  M.recording = (path and path ~= "") and vim.fn.fnamemodify(path, ":p") or nil
  M.restart()
end

--- The server's log: the file after `--log-file` in the command, else Neovim's LSP log (where
--- a server's stderr goes).
---@return string
function M.log_file()
  local cmd = config.options.server == nil and M.server_cmd() or {}
  for i, arg in ipairs(cmd) do
    if arg == "--log-file" and cmd[i + 1] then
      return cmd[i + 1]
    end
    local inline = arg:match("^%-%-log%-file=(.+)$")
    if inline then
      return inline
    end
  end
  return vim.lsp.log.get_filename()
end

--- Send the options (with overrides) to the running server.
---@param overrides table
function M.configure(overrides)
  local client = M.client()
  if client then
    local settings = vim.tbl_extend("force", config.options.init_options, overrides)
    client:notify("workspace/didChangeConfiguration", { settings = { specLsp = settings } })
  end
end

return M
