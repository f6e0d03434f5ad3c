--- `:checkhealth spec_lsp`: the Neovim version, the server command, model availability, whether
--- next edit suggestions are on, the Neovim internals the built-in ui uses, and the running
--- server's state with its last load error, or why its remote engine fails.

local config = require("spec_lsp.config")
local lsp = require("spec_lsp.lsp")

local M = {}

local health = vim.health

local function check_version()
  local v = vim.version()
  local version = ("%d.%d.%d"):format(v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.12") == 1 then
    health.ok("Neovim " .. version .. ": built-in vim.lsp.inline_completion")
  elseif vim.fn.has("nvim-0.11") == 1 then
    health.ok("Neovim " .. version .. ": suggestions drawn as this plugin's virtual text")
  else
    health.error("Neovim " .. version .. " is too old", { "spec-lsp needs Neovim 0.11 or later" })
  end
end

--- Run `exe args...` with a bounded wait; returns (ok, output).
local function run(cmd, timeout_ms)
  local ok, proc = pcall(vim.system, cmd, { text = true })
  if not ok then
    return false, tostring(proc)
  end
  local res = proc:wait(timeout_ms)
  local out = vim.trim((res.stdout or "") .. "\n" .. (res.stderr or ""))
  if res.signal ~= 0 and res.code ~= 0 then
    return false, ("timed out or killed (signal %d)"):format(res.signal)
  end
  return res.code == 0, out
end

local function check_command()
  local server = config.options.server
  if server then
    health.ok("shared server: " .. (server.tcp or server.socket))
    local _, err = lsp.token(server)
    if err then
      health.error(err, { "set server.token or server.token_file, or $SPEC_LSP_TOKEN" })
    end
    return nil
  end
  if config.options.shared_server then
    local shared = require("spec_lsp.shared")
    local path = shared.socket_path()
    local state = shared.answers(path) and "running" or "started on first use"
    health.ok(("shared server: %s (%s)"):format(path, state))
  end
  local cmd = lsp.server_cmd()
  local exe = cmd[1]
  if vim.fn.executable(exe) ~= 1 then
    health.error(("server command not found: %s"):format(exe), {
      "install spec-lsp (`pipx install spec-lsp`, or `make setup` in its checkout) or set `cmd`",
      "a project's own .venv/bin/spec-lsp runs only with `workspace_venv = true`",
    })
    return nil
  end
  health.ok(("server command: %s"):format(table.concat(cmd, " ")))
  return vim.fn.exepath(exe)
end

local function check_models(exe)
  if not exe or vim.fs.basename(exe) ~= "spec-lsp" then
    health.info("model check skipped: the server command is not `spec-lsp`")
    return
  end
  local ok, out = run({ exe, "models", "list" }, 30000)
  if not ok then
    health.warn("`spec-lsp models list` failed: " .. out)
    return
  end
  local preset = config.options.init_options.preset
  health.info("`spec-lsp models list`:\n" .. out)
  if preset and preset ~= "tiny" and not out:find(preset, 1, true) then
    health.warn(("preset %q is not among the models listed"):format(preset))
  end
end

--- The internals (spec_lsp.internals) in a buffer the built-in ui shows ghost text in.
---@param client vim.lsp.Client
local function check_internals(client)
  local suggestion = require("spec_lsp.suggestion")
  if suggestion.ui ~= require("spec_lsp.ui.builtin") then
    return
  end
  local bufnr = vim.lsp.get_buffers_by_client_id(client.id)[1]
  if not bufnr then
    health.info("Neovim internals: not checked (no buffer attached yet)")
    return
  end
  local problems = require("spec_lsp.internals").check(bufnr, client)
  if #problems == 0 then
    health.ok("Neovim internals the built-in ui uses: all there")
  else
    local what = table.concat(problems, "; ")
    health.warn("Neovim internals the built-in ui uses have changed: " .. what, {
      "shown/accepted reports and the next/prev/trigger keys may not work",
      'ui = "virtual_text" does without them',
    })
  end
end

local function check_server()
  local client = lsp.client()
  if not client then
    health.info("the server is not running (it starts with the first matching buffer)")
    return
  end
  health.ok(("server running (client id %d)"):format(client.id))
  check_internals(client)
  local res, err = client:request_sync("spec-lsp/status", vim.NIL, 5000)
  local status = res and res.result
  if type(status) ~= "table" then
    health.warn("no answer to spec-lsp/status: " .. tostring(err or (res and res.err)))
    return
  end
  local summary = ("model %s on %s: %s"):format(
    tostring(status.preset),
    tostring(status.device),
    tostring(status.state)
  )
  local load_error = status.error ~= vim.NIL and status.error or nil
  local engine = type(status.engine) == "table" and status.engine or nil
  if status.state == "failed" then
    health.error(summary, {
      "last load error: " .. tostring(load_error),
      "`spec-lsp doctor` checks torch, the compiler and kernels, the model cache and the presets",
    })
  elseif engine and engine.available == false then
    -- A remote preset stays "ready" while its engine fails; `error` then holds the engine's reason.
    local why = engine.message ~= vim.NIL and engine.message or load_error
    health.warn(summary .. "; engine: " .. tostring(why), {
      "suggestions are empty until the engine answers again; spec-lsp retries by itself",
      "check that the engine runs and that the preset's url (or $SPEC_LSP_REMOTE_URL) points at it",
    })
  elseif load_error then
    health.warn(summary .. "; last load error: " .. tostring(load_error))
  else
    health.ok(summary)
    if engine then
      health.ok("engine: " .. tostring(engine.remote) .. " answers")
    end
  end
end

local function check_next_edit()
  local nextedit = require("spec_lsp.nextedit")
  local o = config.options.next_edit
  if not nextedit.enabled then
    health.info("next edit: off (`:SpecLsp nextedit on`, or `next_edit = { enabled = true }`)")
    return
  end
  local where = o.in_insert and "normal and insert mode" or "normal mode"
  local keys = ("%s jumps to it and accepts it, %s dismisses it"):format(
    tostring(o.accept),
    tostring(o.dismiss)
  )
  health.ok(("next edit: on, asked %d ms after a change or a cursor rest in %s; %s"):format(
    o.idle_ms,
    where,
    keys
  ))
  if config.options.init_options.nextEdit == false then
    health.warn("init_options.nextEdit is false: the server answers every next-edit request empty")
  end
end

function M.check()
  health.start("spec-lsp")
  check_version()
  if not package.loaded["spec_lsp"] or not require("spec_lsp").did_setup then
    health.warn("require('spec_lsp').setup{} has not been called")
  end
  local exe = check_command()
  check_models(exe)
  check_next_edit()
  if lsp.recording then
    health.info("recording this session to " .. lsp.recording)
  end
  check_server()
end

return M
