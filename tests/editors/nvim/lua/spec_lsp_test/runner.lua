-- Runs one scenario as a coroutine inside a real headless Neovim: between steps it yields to the
-- main loop, so typed keys, autocommands, timers and the LSP client all run as they do for a
-- person. Every wait is bounded. What the scenario observes is written as JSON for pytest.
local api = vim.api

local R = {}

local result = { observations = {}, steps = {}, error = nil, done = false }
local co ---@type thread
local spec ---@type table

local function finish()
  local ok, json = pcall(vim.json.encode, result)
  if not ok then
    json = vim.json.encode({ error = "could not encode the result: " .. tostring(json) })
  end
  vim.fn.writefile({ json }, spec.out)
  vim.cmd("qa!")
end

local function resume(...)
  local ok, err = coroutine.resume(co, ...)
  if not ok then
    result.error = debug.traceback(co, tostring(err))
    finish()
  elseif coroutine.status(co) == "dead" then
    result.done = true
    finish()
  end
end

--- Give the main loop `ms` milliseconds (keys, autocommands, LSP messages run meanwhile).
function R.sleep(ms)
  vim.defer_fn(resume, ms)
  coroutine.yield()
end

--- Wait until `cond()` returns a truthy value (returned), at most `timeout_ms`.
function R.wait(timeout_ms, what, cond)
  local deadline = vim.uv.now() + timeout_ms
  while true do
    local ok, value = pcall(cond)
    if ok and value then
      return value
    end
    if vim.uv.now() > deadline then
      error(("timed out after %d ms waiting for %s%s"):format(
        timeout_ms, what, ok and "" or (" (last error: " .. tostring(value) .. ")")
      ), 0)
    end
    R.sleep(25)
  end
end

--- Note a step (shown in pytest's failure message).
function R.step(name)
  table.insert(result.steps, ("%.1fs %s"):format(vim.uv.hrtime() / 1e9, name))
end

function R.observe(name, value)
  result.observations[name] = value == nil and vim.NIL or value
end

--- Type keys as a person would (mappings apply).
function R.feed(keys)
  api.nvim_feedkeys(vim.keycode(keys), "mt", false)
end

--- Type keys that change the buffer, and wait until Neovim has taken them in.
function R.type(bufnr, keys)
  local tick = api.nvim_buf_get_changedtick(bufnr)
  R.feed(keys)
  R.wait(5000, "Neovim to take in " .. keys, function()
    return api.nvim_buf_get_changedtick(bufnr) ~= tick and vim.fn.getchar(1) == 0
  end)
end

--- The whole buffer as one string, and the cursor as (0-based row, byte col).
function R.snapshot(bufnr)
  local cursor = api.nvim_win_get_cursor(0)
  return {
    text = table.concat(api.nvim_buf_get_lines(bufnr or 0, 0, -1, false), "\n"),
    row = cursor[1] - 1,
    col = cursor[2],
    offset = #table.concat(api.nvim_buf_get_lines(bufnr or 0, 0, cursor[1] - 1, false), "\n")
      + (cursor[1] > 1 and 1 or 0)
      + cursor[2],
  }
end

local hint_groups = { ComplHintMore = true, Comment = true }

--- The ghost text drawn in namespace `ns` (virtual text, then virtual lines), or nil.
function R.ghost(bufnr, ns)
  local marks = api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true })
  if #marks == 0 then
    return nil
  end
  local details = marks[1][4]
  local function join(chunks)
    local parts = {}
    for _, chunk in ipairs(chunks or {}) do
      if not hint_groups[chunk[2]] then
        parts[#parts + 1] = chunk[1]
      end
    end
    return table.concat(parts)
  end
  local lines = { join(details.virt_text) }
  for _, line in ipairs(details.virt_lines or {}) do
    lines[#lines + 1] = join(line)
  end
  return { text = table.concat(lines, "\n"), row = marks[1][2], col = marks[1][3], count = #marks }
end

--- Accepts the whole `ghost` shown in `bufnr` with the accept key and observes "accept_all"
--- (the ghost text, the buffer before and after).
function R.accept_all(bufnr, ghost)
  local before = R.snapshot(bufnr)
  R.feed(require("spec_lsp.config").options.keys.accept)
  R.wait(5000, "the accept", function()
    return R.snapshot(bufnr).text ~= before.text
  end)
  R.observe("accept_all", { ghost = ghost.text, before = before, after = R.snapshot(bufnr) })
end

--- The spec-lsp client, once attached to `bufnr`.
function R.client(bufnr)
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr, name = "spec_lsp" })) do
    if not client:is_stopped() then
      return client
    end
  end
end

--- A request answered synchronously but without blocking the coroutine's main loop.
function R.request(client, method, timeout_ms)
  local answer
  client:request(method, vim.NIL, function(err, res)
    answer = { err = err, result = res }
  end)
  R.wait(timeout_ms or 30000, method, function()
    return answer
  end)
  if answer.err then
    error(method .. " failed: " .. vim.inspect(answer.err), 0)
  end
  return answer.result
end

--- Wait until the server says its model is ready.
function R.wait_ready(bufnr, timeout_ms)
  local client = R.wait(timeout_ms, "the spec_lsp client to attach", function()
    return R.client(bufnr)
  end)
  local status
  R.wait(timeout_ms, "the model to be ready (spec-lsp/status)", function()
    status = R.request(client, "spec-lsp/status")
    if status.state == "failed" then
      error("model load failed: " .. tostring(status.error), 0)
    end
    return status.state == "ready"
  end)
  return client, status
end

--- Floating windows now open, with their lines.
function R.floats()
  local found = {}
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_config(win).relative ~= "" then
      local buf = api.nvim_win_get_buf(win)
      found[#found + 1] = { win = win, lines = api.nvim_buf_get_lines(buf, 0, -1, false) }
    end
  end
  return found
end

function R.run(s)
  spec = s
  local scenario = require("spec_lsp_test." .. spec.scenario)
  co = coroutine.create(function()
    scenario(R, spec)
  end)
  -- The whole scenario is bounded too, so Neovim always writes its result and quits.
  vim.defer_fn(function()
    if not result.done and not result.error then
      result.error = ("scenario did not finish within %d ms; last step: %s"):format(
        spec.timeout_ms, tostring(result.steps[#result.steps])
      )
      finish()
    end
  end, spec.timeout_ms)
  resume()
end

return R
