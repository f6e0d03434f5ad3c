--- `:SpecLspStats`: asks the server for `spec-lsp/stats` and `spec-lsp/status` and shows them in a
--- float. `format` turns the answers into lines and knows nothing about windows.

local api = vim.api
local lsp = require("spec_lsp.lsp")

local M = {}

local function num(v)
  if type(v) ~= "number" then
    return "-"
  end
  return v == math.floor(v) and tostring(v) or ("%.2f"):format(v)
end

local function get(t, ...)
  for _, key in ipairs({ ... }) do
    if type(t) ~= "table" then
      return nil
    end
    t = t[key]
  end
  return t ~= vim.NIL and t or nil
end

--- A remote engine's line: where it is and whether it answers, or why it fails; nil if local.
---@param status table|nil  the `spec-lsp/status` answer
---@return string|nil
function M.engine_line(status)
  local engine = get(status, "engine")
  if type(engine) ~= "table" then
    return nil
  end
  if engine.available == false then
    local why = get(engine, "message") or get(status, "error") or get(engine, "remote") or "?"
    return "engine      failing: " .. why
  end
  return ("engine      %s answers"):format(get(engine, "remote") or "?")
end

--- The stats object (and the status, for a remote engine's state) as lines of text.
---@param s table  the `spec-lsp/stats` answer
---@param status table|nil  the `spec-lsp/status` answer
---@return string[]
function M.format(s, status)
  local model = get(s, "model") or {}
  local lines = {
    ("model       %s on %s (%s)"):format(
      get(model, "preset") or "?",
      get(model, "device") or "?",
      get(model, "state") or "?"
    ),
  }
  lines[#lines + 1] = M.engine_line(status)
  vim.list_extend(lines, {
    ("requests    %s  answered %s  cancelled %s  empty %s  cache hits %s  typed through %s"):format(
      num(s.requests),
      num(s.answered),
      num(s.cancelled),
      num(s.empty),
      num(s.cacheHits),
      num(s.typedThrough)
    ),
    ("shown       %s  accepted %s  partially accepted %s  accepted chars %s"):format(
      num(s.shown),
      num(s.accepted),
      num(s.partiallyAccepted),
      num(s.acceptedChars)
    ),
    ("acceptance  %s of drafted tokens"):format(num(get(s, "acceptance"))),
    "latency ms     p50      p90      p99",
  })
  for _, stage in ipairs({ "total", "queue", "prefill", "decode" }) do
    local q = get(s, "latencyMs", stage) or {}
    lines[#lines + 1] = ("  %-9s %8s %8s %8s"):format(stage, num(q.p50), num(q.p90), num(q.p99))
  end
  local kv = get(s, "kvReuse") or {}
  local kv_line = "kv reuse    %s of %s prompt tokens reused, %s prefilled per request"
  lines[#lines + 1] = kv_line:format(
    num(kv.reusedTokens),
    num(kv.promptTokens),
    num(kv.prefilledPerRequest)
  )
  lines[#lines + 1] = ("last        %s ms"):format(num(get(s, "lastLatencyMs")))
  return lines
end

--- Open a float with `lines`; `q` or <Esc> closes it.
---@param lines string[]
---@return integer win
function M.open_float(lines)
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = "spec_lsp_stats"
  local width = 0
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  width = math.min(width + 2, math.max(20, vim.o.columns - 4))
  local height = math.min(#lines, math.max(1, vim.o.lines - 4))
  local win = api.nvim_open_win(buf, true, {
    relative = "editor",
    row = math.floor((vim.o.lines - height) / 2),
    col = math.floor((vim.o.columns - width) / 2),
    width = width,
    height = height,
    style = "minimal",
    border = "rounded",
    title = " spec-lsp stats ",
    title_pos = "center",
  })
  for _, key in ipairs({ "q", "<Esc>" }) do
    vim.keymap.set("n", key, "<Cmd>close<CR>", { buffer = buf, nowait = true })
  end
  return win
end

--- Ask the server for its stats and status and show them; `callback(stats)` gets the raw answer.
---@param callback fun(stats: table|nil, err: string|nil)|nil
function M.show(callback)
  local client = lsp.client()
  if not client then
    vim.notify("spec-lsp: the server is not running", vim.log.levels.WARN)
    return callback and callback(nil, "not running")
  end
  -- The status first (a remote engine's state lives only there), then the stats; a status that
  -- fails only loses the engine line.
  client:request("spec-lsp/status", vim.NIL, function(_, status)
    client:request("spec-lsp/stats", vim.NIL, function(err, result)
      if err or type(result) ~= "table" then
        local msg = err and err.message or "no answer"
        vim.notify("spec-lsp: stats failed: " .. msg, vim.log.levels.ERROR)
        return callback and callback(nil, msg)
      end
      M.open_float(M.format(result, type(status) == "table" and status or nil))
      if callback then
        callback(result)
      end
    end)
  end)
end

return M
