-- Next edit suggestions against the real server and the deterministic fake next-edit model
-- (tests/nextedit/fake_rewriter.py: it carries a rename through the region). Rename `width` on
-- line 0 with a normal-mode command; the server's edit shows (on line 1); <Tab> jumps to it,
-- <Tab> accepts it; the next one is asked for at once, and dismissed with <Esc>;
-- `:SpecLsp nextedit off` stops the requests across another rename (`height`), `on` brings them
-- back, and what comes is accepted too. Observes the edits the server sent, the buffer before and
-- after each accept, the extmarks and the server's own counts (spec-lsp/stats nextEdit).
local api = vim.api

local function marks(bufnr, ns)
  local found = {}
  for _, m in ipairs(api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true })) do
    local text = {}
    for _, chunk in ipairs(m[4].virt_text or {}) do
      text[#text + 1] = chunk[1]
    end
    for _, line in ipairs(m[4].virt_lines or {}) do
      text[#text + 1] = "\n" .. ((line[1] or {})[1] or "")
    end
    found[#found + 1] = {
      row = m[2],
      col = m[3],
      end_row = m[4].end_row,
      end_col = m[4].end_col,
      hl = m[4].hl_group,
      text = table.concat(text),
    }
  end
  return found
end

local function lines(bufnr)
  return api.nvim_buf_get_lines(bufnr, 0, -1, false)
end

return function(R, spec)
  local observe = R.observe
  R = setmetatable({
    observe = function(name, value)
      observe(name, vim.deepcopy(value))
    end,
  }, { __index = R })
  local ns = api.nvim_create_namespace("spec_lsp.nextedit")
  local nextedit = require("spec_lsp.nextedit")
  local wait_ms = spec.edit_timeout_ms

  R.step("open " .. spec.file)
  vim.cmd.edit(vim.fn.fnameescape(spec.file))
  local bufnr = api.nvim_get_current_buf()
  local client, status = R.wait_ready(bufnr, spec.ready_timeout_ms)
  R.observe("status", status)
  local function stats()
    return R.request(client, "spec-lsp/stats").nextEdit or {}
  end

  --- Wait for a next edit on screen; returns it with its marks and the buffer's lines.
  local function edit_shown(what)
    R.wait(wait_ms, what, function()
      return nextedit.current(bufnr) and #marks(bufnr, ns) > 0
    end)
    return { marks = marks(bufnr, ns), edit = nextedit.current(bufnr), lines = lines(bufnr) }
  end

  --- <Tab> to jump (when the cursor is elsewhere), <Tab> to accept; observes both.
  local function jump_and_accept(name)
    local edit = nextedit.current(bufnr)
    local start = { edit.range.start.line + 1, edit.range.start.character } -- ASCII: bytes
    local before = lines(bufnr)
    local jumped = { cursor = api.nvim_win_get_cursor(0), lines_kept = true, pressed = false }
    if not vim.deep_equal(jumped.cursor, start) then
      R.step(name .. ": <Tab> (jump)")
      R.feed("<Tab>")
      R.wait(10000, "the cursor on the edit's line", function()
        return api.nvim_win_get_cursor(0)[1] == start[1]
      end)
      jumped = {
        cursor = api.nvim_win_get_cursor(0),
        lines_kept = vim.deep_equal(before, lines(bufnr)),
        pressed = true,
      }
    end
    R.step(name .. ": <Tab> (accept)")
    R.feed("<Tab>")
    R.wait(10000, "the buffer to change", function()
      return not vim.deep_equal(before, lines(bufnr))
    end)
    R.observe(name, { edit = edit, jumped = jumped, before = before, after = lines(bufnr) })
  end

  R.step("rename width -> w on line 0 (a normal-mode :s)")
  api.nvim_win_set_cursor(0, { 1, 0 })
  R.feed(":s/width/w/<CR>")
  R.observe("first_shown", edit_shown("a next edit after the rename"))
  jump_and_accept("first_accept")

  R.step("the next one follows the accept: <Esc> dismisses it")
  R.observe("second_shown", edit_shown("a next edit after the accept"))
  local before = lines(bufnr)
  R.feed("<Esc>")
  R.wait(10000, "the edit to go", function()
    return #marks(bufnr, ns) == 0
  end)
  R.observe("dismiss", {
    lines_kept = vim.deep_equal(before, lines(bufnr)),
    visible = nextedit.visible(bufnr),
    marks = #marks(bufnr, ns),
  })
  R.wait(10000, "the server to count the reject", function()
    return (stats().rejected or 0) >= 1
  end)
  R.observe("stats_after_dismiss", stats())

  R.step(":SpecLsp nextedit off, then another rename: nothing asked")
  vim.cmd("SpecLsp nextedit off")
  local server_before, plugin_before = stats().requests, nextedit.counts.requests
  api.nvim_win_set_cursor(0, { 1, 0 })
  R.feed(":s/height/h/<CR>")
  R.wait(5000, "the rename", function()
    return lines(bufnr)[1]:find("h%)") ~= nil
  end)
  R.sleep(require("spec_lsp.config").options.next_edit.idle_ms * 5)
  R.observe("off", {
    server_requests = stats().requests - server_before,
    plugin_requests = nextedit.counts.requests - plugin_before,
    marks = #marks(bufnr, ns),
  })

  R.step(":SpecLsp nextedit on: asks again; accept what comes")
  vim.cmd("SpecLsp nextedit on")
  R.observe("on", edit_shown("a next edit for the height rename"))
  jump_and_accept("second_accept")

  R.step(":checkhealth spec_lsp")
  vim.cmd("checkhealth spec_lsp")
  R.wait(60000, "the health report", function()
    local text = table.concat(api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    return text:find("next edit") and text:find("server running") and text
  end)
  R.observe("health", api.nvim_buf_get_lines(0, 0, -1, false))
  vim.cmd("tabclose")
  R.observe("stats", stats())
end
