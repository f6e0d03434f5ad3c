-- Next edit suggestions against an in-process stand-in for the server (the wire contract of
-- docs/protocol.md, nothing of spec-lsp's model): each textDocument/copilotInlineEdit answers an
-- edit renaming the first `width` outside the cursor's line to `w`, at the version asked for.
-- Checks the plugin's side exactly: what it sends, when it asks, what it drops (an answer for
-- another version, an answer superseded by a newer request), the accept key's jump then accept,
-- the dismiss key, <Tab> falling through when nothing is shown, `:SpecLsp nextedit off|on`, and
-- that nothing is asked while an inline completion (ghost text) is shown.
local api = vim.api

--- The stand-in server: answers, and a log of everything the plugin sent.
local function mock_server()
  local server = {
    -- "rename" | "stale" (a version behind) | "slow" (answers after 1.5 s) | "lines" (one edit
    -- renaming `width` on lines 3 and 4, from the middle of one to the middle of the other)
    mode = "rename",
    requests = {}, -- copilotInlineEdit params, with .id
    answered = 0,
    notes = {}, -- method -> list of params
    commands = {}, -- workspace/executeCommand params
    completions = false, -- answer textDocument/inlineCompletion with "GHOST"
  }
  local function note(method, params)
    server.notes[method] = server.notes[method] or {}
    table.insert(server.notes[method], params)
  end
  local function across_lines(bufnr, params, id)
    local l3, l4 = unpack(api.nvim_buf_get_lines(bufnr, 3, 5, false))
    local s3, e3 = l3:find("width")
    local s4, e4 = l4:find("width")
    if not s3 or not s4 then
      return nil
    end
    return {
      text = "w" .. l3:sub(e3 + 1) .. "\n" .. l4:sub(1, s4 - 1) .. "w",
      textDocument = { uri = params.textDocument.uri, version = params.textDocument.version },
      range = { start = { line = 3, character = s3 - 1 }, ["end"] = { line = 4, character = e4 } },
      command = {
        title = "accepted",
        command = "spec-lsp.didAcceptInlineEdit",
        arguments = { { id = id } },
      },
    }
  end

  --- The edit: the first `width` (a whole word) on a line other than the cursor's, as `w`.
  local function rename(params)
    local bufnr = vim.uri_to_bufnr(params.textDocument.uri)
    if server.mode == "lines" then
      return across_lines(bufnr, params, "edit-" .. #server.requests)
    end
    for row, line in ipairs(api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
      local s, e = line:find("%f[%w_]width%f[^%w_]")
      if s and row - 1 ~= params.position.line then
        return {
          text = "w",
          textDocument = { uri = params.textDocument.uri, version = params.textDocument.version },
          range = {
            start = { line = row - 1, character = s - 1 },
            ["end"] = { line = row - 1, character = e },
          },
          command = {
            title = "spec-lsp: next edit accepted",
            command = "spec-lsp.didAcceptInlineEdit",
            arguments = { { id = "edit-" .. #server.requests } },
          },
        }
      end
    end
  end
  local handlers = {
    initialize = function()
      return {
        capabilities = {
          textDocumentSync = { openClose = true, change = 2 },
          inlineCompletionProvider = true,
          executeCommandProvider = { commands = { "spec-lsp.didAcceptInlineEdit" } },
        },
      }
    end,
    ["spec-lsp/status"] = function()
      return { state = "ready", preset = "mock", device = "lua" }
    end,
    ["textDocument/inlineCompletion"] = function(params)
      if not server.completions then
        return { items = {} }
      end
      local p = params.position
      local range = { start = p, ["end"] = p }
      return { items = { { insertText = "GHOST", range = range } } }
    end,
    ["workspace/executeCommand"] = function(params)
      table.insert(server.commands, params)
      return vim.NIL
    end,
  }
  local next_id = 0
  server.cmd = function(dispatchers)
    local closing = false
    return {
      request = function(method, params, callback, notify_reply)
        next_id = next_id + 1
        local id = next_id
        local function reply(err, result)
          if closing then
            return
          end
          callback(err, result)
          if notify_reply then
            notify_reply(id)
          end
        end
        if method == "textDocument/copilotInlineEdit" then
          table.insert(server.requests, vim.tbl_extend("force", params, { id = id }))
          local mode = server.mode
          local edit = rename(params)
          if edit and mode == "stale" then
            edit.textDocument.version = edit.textDocument.version - 1
          end
          vim.defer_fn(function()
            server.answered = server.answered + 1
            reply(nil, { edits = { edit } })
          end, mode == "slow" and 1500 or 5)
        else
          local handler = handlers[method]
          vim.schedule(function()
            reply(nil, handler and handler(params) or vim.NIL)
          end)
        end
        return true, id
      end,
      notify = function(method, params)
        note(method, params)
        if method == "exit" then
          closing = true
          dispatchers.on_exit(0, 15)
        end
        return true
      end,
      is_closing = function()
        return closing
      end,
      terminate = function()
        closing = true
      end,
    }
  end
  return server
end

--- The next-edit extmarks: each one's row, col, end, highlight and virtual text.
local function marks(bufnr, ns)
  local found = {}
  for _, m in ipairs(api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true })) do
    local d = m[4]
    local text = {}
    for _, chunk in ipairs(d.virt_text or {}) do
      text[#text + 1] = chunk[1]
    end
    found[#found + 1] = {
      row = m[2],
      col = m[3],
      end_row = d.end_row,
      end_col = d.end_col,
      hl = d.hl_group,
      virt_text = table.concat(text),
      virt_hl = d.virt_text and d.virt_text[1] and d.virt_text[1][2] or nil,
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
    observe = function(name, value) -- a copy: the server's logs and the options change later
      observe(name, vim.deepcopy(value))
    end,
  }, { __index = R })
  local server = mock_server()
  require("spec_lsp.lsp").transport = function()
    return server.cmd
  end
  require("spec_lsp").setup({ next_edit = { idle_ms = spec.idle_ms } })
  local spec_lsp = require("spec_lsp")
  local nextedit = require("spec_lsp.nextedit")
  local ns = api.nvim_create_namespace("spec_lsp.nextedit")
  local idle = spec.idle_ms

  --- Let the idle timer run out several times over (for "nothing was asked" checks).
  local function rest()
    R.sleep(idle * 6)
  end

  vim.cmd.edit(vim.fn.fnameescape(spec.file))
  local bufnr = api.nvim_get_current_buf()
  R.wait(30000, "the stand-in client to attach", function()
    return R.client(bufnr)
  end)
  R.observe("config", require("spec_lsp.config").options.next_edit)

  R.step("open: no edits yet, so the cursor rest asks once")
  R.wait(10000, "the request for the cursor rest at open", function()
    return #server.requests >= 1 and server.answered >= 1
  end)
  rest()
  R.observe("open", {
    requests = #server.requests,
    marks = marks(bufnr, ns),
  })
  -- (the stand-in answers an edit even with no history: it is shown; dismiss it for a clean start)
  if nextedit.visible(bufnr) then
    nextedit.dismiss(bufnr)
  end

  R.step("rename on line 0, then wait for the edit on line 1")
  local asked = #server.requests
  api.nvim_win_set_cursor(0, { 1, 0 })
  R.feed(":s/width/w/<CR>")
  R.wait(10000, "the next-edit extmarks on line 1", function()
    local m = marks(bufnr, ns)
    return #m > 0 and m[1].row == 1
  end)
  local req = server.requests[#server.requests]
  R.observe("shown", {
    new_requests = #server.requests - asked,
    request = req,
    buf_version = vim.lsp.util.buf_versions[bufnr],
    uri = vim.uri_from_bufnr(bufnr),
    cursor = api.nvim_win_get_cursor(0),
    marks = marks(bufnr, ns),
    visible = spec_lsp.nextedit.visible(),
    shows = server.notes["textDocument/didShowInlineEdit"],
    current = spec_lsp.nextedit.current(),
  })

  R.step("<Tab>: jump to the edit")
  R.feed("<Tab>")
  R.wait(5000, "the cursor on line 1", function()
    return api.nvim_win_get_cursor(0)[1] == 2
  end)
  R.observe("jump", { cursor = api.nvim_win_get_cursor(0), lines = lines(bufnr) })

  R.step("<Tab>: accept it")
  asked = #server.requests
  R.feed("<Tab>")
  R.wait(5000, "line 1 to change", function()
    return lines(bufnr)[2] ~= "    return width * height"
  end)
  R.wait(10000, "the next edit after the accept", function()
    local m = marks(bufnr, ns)
    return #m > 0 and m[1].row ~= 1 and m
  end)
  R.observe("accept", {
    lines = lines(bufnr),
    commands = server.commands,
    new_requests = #server.requests - asked,
    marks = marks(bufnr, ns),
    cursor = api.nvim_win_get_cursor(0),
  })

  R.step("<Esc>: dismiss; no new request until a change, even on another line")
  local before = lines(bufnr)
  asked = #server.requests
  R.feed("<Esc>")
  R.wait(5000, "the edit to go", function()
    return #marks(bufnr, ns) == 0
  end)
  R.feed("gg")
  rest()
  R.observe("dismiss", {
    lines_kept = vim.deep_equal(before, lines(bufnr)),
    rejects = server.notes["spec-lsp/didRejectInlineEdit"],
    new_requests = #server.requests - asked,
    visible = nextedit.visible(bufnr),
  })

  R.step("an answer for another version is dropped")
  server.mode = "stale"
  local answered, stale = server.answered, nextedit.counts.stale
  R.feed(":s/height/h/<CR>")
  R.wait(10000, "the stale answer", function()
    return server.answered > answered and nextedit.counts.stale > stale
  end)
  rest()
  R.observe("stale", { marks = marks(bufnr, ns), visible = nextedit.visible(bufnr) })

  R.step("a newer request supersedes (cancels) the one in flight")
  server.mode = "slow"
  asked = #server.requests
  R.feed(":s/(/( /<CR>")
  R.wait(10000, "the slow request", function()
    return #server.requests > asked
  end)
  local first = server.requests[#server.requests].id
  R.feed(":s/( /(/<CR>")
  R.wait(10000, "the second request", function()
    return #server.requests > asked + 1
  end)
  server.mode = "rename"
  R.wait(10000, "the second answer shown", function()
    return nextedit.visible(bufnr)
  end)
  local cancels = {}
  for _, p in ipairs(server.notes["$/cancelRequest"] or {}) do
    cancels[#cancels + 1] = p.id
  end
  R.observe("supersede", {
    first = first,
    cancels = cancels,
    shown_version = nextedit.current(bufnr).textDocument.version,
    buf_version = vim.lsp.util.buf_versions[bufnr],
  })

  R.step("any text change clears the edit (a normal-mode change; the next answer is slow)")
  server.mode = "slow"
  api.nvim_win_set_cursor(0, { 1, 0 })
  R.feed("rD")
  local seen = R.wait(5000, "the change", function()
    return lines(bufnr)[1]:sub(1, 1) == "D"
      and { marks = #marks(bufnr, ns), visible = nextedit.visible(bufnr) }
  end)
  R.observe("cleared_by_change", seen)
  server.mode = "rename"

  R.step(":SpecLsp nextedit off: no requests")
  vim.cmd("SpecLsp nextedit off")
  R.sleep(idle * 2)
  asked = #server.requests
  R.feed("u")
  R.feed("j")
  rest()
  R.observe("off", {
    new_requests = #server.requests - asked,
    marks = #marks(bufnr, ns),
    enabled = nextedit.enabled,
  })

  R.step("normal-mode <Tab> with nothing shown: <C-i>, forward in the jumplist")
  R.feed("gg")
  R.feed("G")
  R.feed("<C-o>")
  R.wait(5000, "<C-o> back to the top", function()
    return api.nvim_win_get_cursor(0)[1] == 1
  end)
  R.feed("<Tab>")
  R.wait(5000, "<Tab> forward to the end", function()
    return api.nvim_win_get_cursor(0)[1] == api.nvim_buf_line_count(bufnr)
  end)
  R.observe("tab_jumplist", api.nvim_win_get_cursor(0)[1] == api.nvim_buf_line_count(bufnr))

  R.step("insert-mode <Tab> with nothing shown: a Tab")
  R.type(bufnr, "o")
  local before_tab = R.snapshot(bufnr)
  R.type(bufnr, "<Tab>")
  R.observe("insert_tab", { before = before_tab, after = R.snapshot(bufnr) })
  R.feed("<Esc>")
  R.type(bufnr, "u")

  R.step(":SpecLsp nextedit on: asks again")
  asked = #server.requests
  vim.cmd("SpecLsp nextedit on")
  R.feed(":1s/h)/hh)/<CR>")
  R.wait(10000, "a request once on again", function()
    return #server.requests > asked
  end)
  R.observe("on", { new_requests = #server.requests - asked, enabled = nextedit.enabled })

  R.step("nothing asked while ghost text is shown (in_insert on)")
  if nextedit.visible(bufnr) then
    nextedit.dismiss(bufnr)
  end
  require("spec_lsp.config").options.next_edit.in_insert = true
  server.completions = true
  R.feed("A")
  R.type(bufnr, " ")
  local ghost_ns = api.nvim_create_namespace("nvim.lsp.inline_completion")
  R.wait(10000, "ghost text", function()
    return #api.nvim_buf_get_extmarks(bufnr, ghost_ns, 0, -1, {}) > 0
  end)
  asked = #server.requests
  local asked_with_ghost = spec_lsp.nextedit.request(bufnr)
  R.observe("ghost", {
    asked = asked_with_ghost,
    new_requests = #server.requests - asked,
    suggestion_visible = spec_lsp.visible(bufnr),
  })
  R.feed("<Esc>")

  R.step("an edit across lines: the lines it makes, under the lines it changes")
  require("spec_lsp.config").options.next_edit.in_insert = false
  R.wait(5000, "normal mode", function()
    return api.nvim_get_mode().mode == "n"
  end)
  server.mode = "lines"
  spec_lsp.nextedit.request()
  R.wait(10000, "the edit across lines", function()
    local cur = nextedit.current(bufnr)
    return cur and cur.range["end"].line == 4
  end)
  local details = {}
  for _, m in ipairs(api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true })) do
    local virt = {}
    for _, l in ipairs(m[4].virt_lines or {}) do
      virt[#virt + 1] = l[1][1]
    end
    details[#details + 1] = {
      row = m[2],
      col = m[3],
      end_row = m[4].end_row,
      end_col = m[4].end_col,
      virt_lines = virt,
      above = m[4].virt_lines_above,
    }
  end
  local before_lines = lines(bufnr)
  spec_lsp.nextedit.accept() -- jump
  spec_lsp.nextedit.accept() -- apply
  R.observe("across_lines", { marks = details, before = before_lines, after = lines(bufnr) })
  R.observe("counts", nextedit.counts)
end
