--- Definitions the editor already knows (`editor_definitions = true`): when typing pauses, asks
--- the buffer's OTHER language servers (pyright, gopls, ...; never spec-lsp's own client) for
--- textDocument/definition of the identifiers on the cursor's line and the line above, and for
--- the hover of those defined in another file, and sends what they answer to spec-lsp with
--- `spec-lsp/definitions` (docs/protocol.md): the server puts them in its prompts as it does its
--- own index's definitions. Nothing is asked while no other server that answers definitions is
--- attached. Knows nothing about suggestions.

local api = vim.api

local M = {}

M.method = "spec-lsp/definitions"
--- ms typing and the cursor rest before the other servers are asked
M.delay = 250
--- identifiers asked about at one pause (the nearest to the cursor first)
M.max_names = 8
--- ms the other servers have to answer; what came by then is sent
M.timeout_ms = 1500

local timers = {} ---@type table<integer, uv.uv_timer_t>
local last_sent = {} ---@type table<integer, table>

--- The identifiers of the cursor's line and the line above, the nearest to the cursor first, each
--- name once: { name, row (0-based), col (0-based byte) }.
---@param bufnr integer
---@param row integer  0-based cursor row
---@param col integer  0-based cursor byte column
---@return { name: string, row: integer, col: integer }[]
function M.identifiers(bufnr, row, col)
  local first = math.max(row - 1, 0)
  local lines = api.nvim_buf_get_lines(bufnr, first, row + 1, false)
  local found = {}
  for i, line in ipairs(lines) do
    local r = first + i - 1
    local init = 1
    while true do
      local s, e = line:find("[%a_][%w_]*", init)
      if not s then
        break
      end
      local distance = r == row and math.abs(col - (s - 1)) or (10000 + math.abs(col - (s - 1)))
      found[#found + 1] = { name = line:sub(s, e), row = r, col = s - 1, distance = distance }
      init = e + 1
    end
  end
  table.sort(found, function(a, b)
    return a.distance < b.distance
  end)
  local seen, out = {}, {}
  for _, id in ipairs(found) do
    if not seen[id.name] and #out < M.max_names then
      seen[id.name] = true
      out[#out + 1] = { name = id.name, row = id.row, col = id.col }
    end
  end
  return out
end

--- The buffer's attached language servers other than spec-lsp that answer definitions.
---@param bufnr integer
---@return vim.lsp.Client[]
function M.others(bufnr)
  local out = {}
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr })) do
    if
      client.name ~= require("spec_lsp.lsp").name
      and not client:is_stopped()
      and client:supports_method("textDocument/definition", bufnr)
    then
      out[#out + 1] = client
    end
  end
  return out
end

--- Hover contents (MarkupContent, MarkedString or a list of them) as plain text.
---@param contents any
---@return string
function M.hover_text(contents)
  if type(contents) == "string" then
    return contents
  end
  if type(contents) ~= "table" then
    return ""
  end
  if contents.value ~= nil then
    return tostring(contents.value)
  end
  local parts = {}
  for _, part in ipairs(contents) do
    local text = M.hover_text(part)
    if text ~= "" then
      parts[#parts + 1] = text
    end
  end
  return table.concat(parts, "\n")
end

--- The first location of a textDocument/definition answer (Location, Location[] or
--- LocationLink[]): uri, range; nil for none.
---@param result any
---@return string|nil, table|nil
local function first_location(result)
  if type(result) ~= "table" then
    return nil
  end
  local loc = result.uri and result or result.targetUri and result or result[1]
  if type(loc) ~= "table" then
    return nil
  end
  return loc.targetUri or loc.uri, loc.targetSelectionRange or loc.range or loc.targetRange
end

--- Asks `client` for the definition of `id`, then, where one is in another file, for its hover;
--- `done(entry|nil)` gets the definition ({ name, uri, range, text }) when the hover has text.
---@param client vim.lsp.Client
---@param bufnr integer
---@param id { name: string, row: integer, col: integer }
---@param done fun(entry: table|nil)
local function ask(client, bufnr, id, done)
  local uri = vim.uri_from_bufnr(bufnr)
  local character = vim.lsp.util.character_offset(bufnr, id.row, id.col, client.offset_encoding)
  local position = { line = id.row, character = character }
  local params = { textDocument = { uri = uri }, position = position }
  local function hover(target, range)
    local ok = client:request("textDocument/hover", params, function(err, result)
      local text = not err and type(result) == "table" and M.hover_text(result.contents) or ""
      local entry = { name = id.name, uri = target, range = range, text = text }
      done(vim.trim(text) ~= "" and entry or nil)
    end, bufnr)
    if not ok then
      done(nil)
    end
  end
  local ok = client:request("textDocument/definition", params, function(err, result)
    local target, range
    if not err then
      target, range = first_location(result)
    end
    local elsewhere = target and range and target ~= uri
    if elsewhere and client:supports_method("textDocument/hover", bufnr) then
      hover(target, range)
    else
      done(nil)
    end
  end, bufnr)
  if not ok then
    done(nil)
  end
end

--- Sends `entries` to spec-lsp unless they are what it was told last for `bufnr`.
---@param spec_client vim.lsp.Client
---@param bufnr integer
---@param version integer|nil
---@param entries table[]
local function send(spec_client, bufnr, version, entries)
  if #entries == 0 or spec_client:is_stopped() or not api.nvim_buf_is_valid(bufnr) then
    return
  end
  if vim.deep_equal(last_sent[bufnr], entries) then
    return
  end
  last_sent[bufnr] = entries
  spec_client:notify(M.method, {
    textDocument = { uri = vim.uri_from_bufnr(bufnr), version = version },
    definitions = entries,
  })
end

--- At a pause: asks the other servers about the identifiers near the cursor, then sends what
--- they answered (all, or what came within `timeout_ms`).
---@param spec_client vim.lsp.Client
---@param bufnr integer
function M.collect(spec_client, bufnr)
  if not api.nvim_buf_is_valid(bufnr) or api.nvim_get_current_buf() ~= bufnr then
    return
  end
  local others = M.others(bufnr)
  if #others == 0 then
    return
  end
  local cursor = api.nvim_win_get_cursor(0)
  local ids = M.identifiers(bufnr, cursor[1] - 1, cursor[2])
  local version = vim.lsp.util.buf_versions[bufnr]
  local answers, pending, sent = {}, #ids * #others, false
  local function flush()
    if sent then
      return
    end
    sent = true
    local entries, seen = {}, {}
    for i = 1, #ids * #others do -- in the identifiers' order, nearest first
      local entry = answers[i]
      if entry and not seen[entry.name] then
        seen[entry.name] = true
        entries[#entries + 1] = entry
      end
    end
    send(spec_client, bufnr, version, entries)
  end
  for i, id in ipairs(ids) do
    for j, client in ipairs(others) do
      ask(client, bufnr, id, function(entry)
        answers[(i - 1) * #others + j] = entry
        pending = pending - 1
        if pending == 0 then
          flush()
        end
      end)
    end
  end
  vim.defer_fn(flush, M.timeout_ms)
end

--- Asks and sends at each pause in `bufnr` (typing, or the cursor moving, then resting).
---@param bufnr integer
---@param spec_client vim.lsp.Client
function M.attach(bufnr, spec_client)
  M.detach(bufnr)
  if not require("spec_lsp.config").options.editor_definitions then
    return
  end
  local timer = assert(vim.uv.new_timer())
  timers[bufnr] = timer
  local group = api.nvim_create_augroup("spec_lsp_definitions_" .. bufnr, { clear = true })
  api.nvim_create_autocmd({ "TextChangedI", "TextChanged", "CursorMovedI", "CursorMoved" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      timer:stop()
      timer:start(
        M.delay,
        0,
        vim.schedule_wrap(function()
          M.collect(spec_client, bufnr)
        end)
      )
    end,
  })
  api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = bufnr,
    callback = function()
      M.detach(bufnr)
    end,
  })
end

---@param bufnr integer
function M.detach(bufnr)
  local timer = timers[bufnr]
  if timer then
    timer:stop()
    if not timer:is_closing() then
      timer:close()
    end
    timers[bufnr] = nil
  end
  last_sent[bufnr] = nil
  pcall(api.nvim_del_augroup_by_name, "spec_lsp_definitions_" .. bufnr)
end

return M
