--- The server's state for people: the statusline text (`require("spec_lsp").statusline()`) and
--- `:SpecLsp status`. Kept from `spec-lsp/status` answers and `$/progress` (model loading); the
--- statusline function only reads what is kept, so it costs nothing to call on every redraw.

local M = {}

---@type table|nil  the last `spec-lsp/status` answer
M.last = nil
---@type string|nil  "loading 40%" while the server reports progress
M.progress = nil

local function get(t, key)
  local v = type(t) == "table" and t[key] or nil
  return v ~= vim.NIL and v or nil
end

--- Ask the server for its status again (answered asynchronously; redraws the statusline).
---@param client vim.lsp.Client|nil
---@param callback fun(status: table|nil, err: string|nil)|nil
function M.refresh(client, callback)
  if not client then
    if callback then
      callback(nil, "the server is not running")
    end
    return
  end
  client:request("spec-lsp/status", vim.NIL, function(err, result)
    if not err and type(result) == "table" then
      M.last = result
      if result.state ~= "loading" then
        M.progress = nil
      end
      pcall(vim.cmd.redrawstatus)
    end
    if callback then
      callback(not err and result or nil, err and (err.message or vim.inspect(err)) or nil)
    end
  end)
end

--- A `$/progress` value from the server (LspProgress): model loading.
---@param value table
function M.on_progress(value)
  if value.kind == "end" then
    M.progress = nil
  else
    local pct = type(value.percentage) == "number" and (" %d%%"):format(value.percentage) or ""
    M.progress = "loading" .. pct
  end
  pcall(vim.cmd.redrawstatus)
end

--- The statusline text: "" without a server, else "spec-lsp <preset>" when ready, "spec-lsp
--- loading 40%", "spec-lsp off", "spec-lsp failed" or "spec-lsp engine down".
---@param running boolean  a spec-lsp client runs
---@param enabled boolean  suggestions are on
---@return string
function M.text(running, enabled)
  if not running then
    return ""
  end
  if not enabled then
    return "spec-lsp off"
  end
  if M.progress then
    return "spec-lsp " .. M.progress
  end
  local s = M.last
  if not s then
    return "spec-lsp starting"
  end
  if s.state ~= "ready" then
    return "spec-lsp " .. tostring(s.state == "disabled" and "off" or s.state)
  end
  local engine = get(s, "engine")
  if engine and engine.available == false then
    return "spec-lsp engine down"
  end
  return "spec-lsp " .. tostring(get(s, "preset") or "ready")
end

--- `:SpecLsp status` lines: the model, its state, why it failed, the remote engine.
---@param s table
---@return string[]
function M.describe(s)
  local lines = {
    ("spec-lsp: %s on %s: %s"):format(
      tostring(get(s, "preset")),
      tostring(get(s, "device")),
      tostring(get(s, "state"))
    ),
    ("target %s, draft %s"):format(tostring(get(s, "target")), tostring(get(s, "draft") or "none")),
  }
  if get(s, "forward") or get(s, "kernels") then
    lines[#lines + 1] = ("forward %s, kernels %s"):format(
      tostring(get(s, "forward")),
      tostring(get(s, "kernels"))
    )
  end
  local engine = get(s, "engine")
  if engine then
    lines[#lines + 1] = engine.available == false
        and ("engine failing: " .. tostring(get(engine, "message") or get(s, "error")))
      or ("engine " .. tostring(get(engine, "remote")) .. " answers")
  elseif get(s, "error") then
    lines[#lines + 1] = "error: " .. tostring(get(s, "error"))
  end
  return lines
end

return M
