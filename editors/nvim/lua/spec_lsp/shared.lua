--- The shared server this plugin starts on first use (`shared_server = true`): one
--- `spec-lsp serve --socket` for every Neovim of the user, so a second window costs no second
--- model. The socket is `$XDG_RUNTIME_DIR/spec-lsp/shared.sock` (else
--- `~/.cache/spec-lsp/run/shared.sock`, beside the token files `spec-lsp serve --tcp` writes),
--- created 0600 by the server: it needs no token. When nothing answers there, the server command
--- is started detached with `--socket` (and `--idle-exit`, so it ends once the last window has
--- been gone a while); every Neovim then connects to it. Knows nothing about suggestions.

local M = {}

M.START_TIMEOUT_MS = 30000 -- the server imports its libraries before it listens
M.IDLE_EXIT_S = 300 -- the server ends this long after its last client left

--- The folder of the socket and its log: the one the server's token files go to.
---@return string
function M.dir()
  local runtime = vim.env.XDG_RUNTIME_DIR
  if runtime and runtime ~= "" then
    return runtime .. "/spec-lsp"
  end
  return vim.fn.expand("~") .. "/.cache/spec-lsp/run"
end

---@return string
function M.socket_path()
  return M.dir() .. "/shared.sock"
end

--- Whether a server accepts connections at `path` (a connect that succeeds, closed at once).
---@param path string
---@return boolean
function M.answers(path)
  local pipe = vim.uv.new_pipe(false)
  if not pipe then
    return false
  end
  local done, ok = false, false
  pipe:connect(path, function(err)
    ok, done = err == nil, true
  end)
  vim.wait(2000, function()
    return done
  end, 10)
  if not pipe:is_closing() then
    pipe:close()
  end
  return ok
end

--- `cmd` (a `spec-lsp serve` command) as the shared server: on the socket, ending when idle,
--- logging to a file beside the socket unless `cmd` names one.
---@param cmd string[]
---@param path string
---@return string[]
function M.serve_cmd(cmd, path)
  local full = vim.deepcopy(cmd)
  local has_log = false
  for _, arg in ipairs(full) do
    if arg == "--log-file" or arg:match("^%-%-log%-file=") then
      has_log = true
    end
  end
  vim.list_extend(full, { "--socket", path, "--idle-exit", tostring(M.IDLE_EXIT_S) })
  if not has_log then
    vim.list_extend(full, { "--log-file", M.dir() .. "/shared.log" })
  end
  return full
end

--- The socket of the running shared server, started with `cmd` first when none answers.
---@param cmd string[]
---@param cwd string  where the server starts (never the workspace)
---@return string|nil path, string|nil err
function M.ensure(cmd, cwd)
  local path = M.socket_path()
  if M.answers(path) then
    return path
  end
  -- Two editors starting at once both create the folder: `mkdir -p` raises E739 in the one that
  -- loses the race, which is fine as long as the folder is there afterwards.
  local made, mkdir_err = pcall(vim.fn.mkdir, M.dir(), "p", tonumber("700", 8))
  if not made and vim.fn.isdirectory(M.dir()) == 0 then
    return nil, ("cannot create %s: %s"):format(M.dir(), tostring(mkdir_err))
  end
  local full = M.serve_cmd(cmd, path)
  local opts = { detach = true, cwd = cwd, stdout = false, stderr = false }
  local ok, err = pcall(vim.system, full, opts)
  if not ok then
    return nil, ("cannot start %s: %s"):format(full[1], tostring(err))
  end
  local deadline = vim.uv.hrtime() + M.START_TIMEOUT_MS * 1e6
  while vim.uv.hrtime() < deadline do
    if M.answers(path) then
      return path
    end
    vim.wait(100)
  end
  return nil, ("the shared server did not answer at %s (its log: %s)"):format(
    path,
    M.dir() .. "/shared.log"
  )
end

return M
