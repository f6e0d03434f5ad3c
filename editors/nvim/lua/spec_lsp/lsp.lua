--- The spec-lsp client: the server command, attaching buffers, talking to the server, and
--- restarting it (for example under `spec-lsp record`). Knows nothing about how suggestions show.

local config = require("spec_lsp.config")

local M = {}

M.name = "spec_lsp"

---@type string|nil  file that `spec-lsp record` writes while recording; nil when not recording
M.recording = nil

-- editors/nvim, whose ../../.venv is the spec-lsp checkout's own environment
local plugin_root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h:h:h")

--- `spec-lsp serve` from PATH, else from the project's or this checkout's `.venv`.
---@return string[]
function M.default_cmd()
  if vim.fn.executable("spec-lsp") == 1 then
    return { "spec-lsp", "serve" }
  end
  for _, root in ipairs({ vim.fn.getcwd(), plugin_root .. "/../.." }) do
    local exe = vim.fs.normalize(root .. "/.venv/bin/spec-lsp")
    if vim.fn.executable(exe) == 1 then
      return { exe, "serve" }
    end
  end
  return { "spec-lsp", "serve" }
end

--- The command that starts the server now: the configured one, wrapped in `spec-lsp record`
--- while recording.
---@return string[]
function M.server_cmd()
  local cmd = config.options.cmd or M.default_cmd()
  if not M.recording then
    return cmd
  end
  local exe = vim.fs.basename(cmd[1]) == "spec-lsp" and cmd[1] or M.default_cmd()[1]
  local v = vim.version()
  local source = ("neovim %d.%d.%d"):format(v.major, v.minor, v.patch)
  return vim.list_extend({ exe, "record", "--out", M.recording, "--source", source, "--" }, cmd)
end

--- Whether spec-lsp should attach to this buffer.
---@param bufnr integer
---@return boolean
function M.wants(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= "" then
    return false
  end
  local ft = vim.bo[bufnr].filetype
  local fts = config.options.filetypes
  return (vim.list_contains(fts, "*") and ft ~= "") or vim.list_contains(fts, ft)
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
  return vim.lsp.start({
    name = M.name,
    cmd = M.server_cmd(),
    root_dir = root,
    init_options = next(config.options.init_options) and config.options.init_options
      or vim.empty_dict(), -- {} (not []) on the wire
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
