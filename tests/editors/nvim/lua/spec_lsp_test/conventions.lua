-- The peers' conventions against a real server, with `auto_trigger = false` and a <Tab> mapping
-- made before setup (as nvim-cmp, blink or a snippet plugin make one): typing asks nothing, the
-- trigger key asks once; <Tab> accepts what is shown and otherwise runs that earlier mapping;
-- :SpecLsp status|toggle|log|stats|restart; the statusline function; filetypes "*" with a denylist.
local api = vim.api

return function(R, spec)
  local ns = api.nvim_create_namespace(spec.namespace)
  local keys = require("spec_lsp.config").options.keys
  local spec_lsp = require("spec_lsp")
  local messages = {}
  local notify = vim.notify
  vim.notify = function(msg, level, opts) ---@diagnostic disable-line: duplicate-set-field
    messages[#messages + 1] = msg
    return notify(msg, level, opts)
  end

  vim.cmd.edit(vim.fn.fnameescape(spec.file))
  local bufnr = api.nvim_get_current_buf()
  local client = R.wait_ready(bufnr, spec.ready_timeout_ms)
  R.observe("statusline_ready", R.wait(10000, "the statusline to say ready", function()
    local text = spec_lsp.statusline()
    return text:find("tiny") and text
  end))

  R.step("type with auto_trigger off, then the trigger key")
  R.feed("Go")
  R.type(bufnr, spec.typed)
  local before = R.request(client, "spec-lsp/stats").requests
  R.feed(keys.trigger)
  local ghost = R.wait(spec.ghost_timeout_ms, "ghost text after the trigger key", function()
    local g = R.ghost(bufnr, ns)
    return g and g.text ~= "" and g or nil
  end)
  local after = R.request(client, "spec-lsp/stats").requests
  R.observe("manual", { typed_then_trigger = after - before, before = before, ghost = ghost.text })

  R.step("<Tab> with ghost text accepts it")
  local snap = R.snapshot(bufnr)
  R.feed(keys.accept)
  R.wait(5000, "the accept", function()
    return R.snapshot(bufnr).text ~= snap.text
  end)
  R.observe("accept", { ghost = ghost.text, before = snap, after = R.snapshot(bufnr) })

  R.step("<Tab> without ghost text runs the earlier mapping")
  R.type(bufnr, "<CR>")
  snap = R.snapshot(bufnr)
  R.feed(keys.accept)
  R.wait(5000, "the earlier <Tab> mapping to insert", function()
    return R.snapshot(bufnr).text ~= snap.text
  end)
  local hits = vim.g.spec_lsp_fallback
  R.observe("fallback", { before = snap, after = R.snapshot(bufnr), hits = hits })
  vim.cmd("stopinsert")

  R.step(":SpecLsp status")
  vim.cmd("SpecLsp status")
  R.observe("status_message", R.wait(10000, "the status message", function()
    for _, m in ipairs(messages) do
      if m:find("^spec%-lsp: tiny") then
        return m
      end
    end
  end))

  R.step(":SpecLsp toggle")
  vim.cmd("SpecLsp toggle")
  local off = spec_lsp.statusline()
  vim.cmd("SpecLsp toggle")
  R.observe("toggle", { off = off, on = R.wait(10000, "the statusline back on", function()
    local text = spec_lsp.statusline()
    return text ~= "spec-lsp off" and text
  end) })

  R.step(":SpecLsp stats")
  vim.cmd("SpecLsp stats")
  local float = R.wait(10000, "the stats float", function()
    return R.floats()[1]
  end)
  R.observe("stats_float", float.lines)
  api.nvim_win_close(float.win, true)

  R.step(":SpecLsp log")
  vim.cmd("SpecLsp log")
  R.observe("log_buffer", api.nvim_buf_get_name(0))
  vim.cmd("close")

  R.step("filetypes * with a denylist")
  local text_buf = api.nvim_create_buf(true, false)
  api.nvim_buf_set_name(text_buf, spec.file .. ".notes.txt")
  local commit_buf = api.nvim_create_buf(true, false)
  api.nvim_buf_set_name(commit_buf, spec.file .. ".COMMIT_EDITMSG")
  api.nvim_set_current_buf(text_buf)
  vim.bo[text_buf].filetype = "text"
  api.nvim_set_current_buf(commit_buf)
  vim.bo[commit_buf].filetype = "gitcommit"
  R.wait(10000, "the text buffer to attach", function()
    return R.client(text_buf)
  end)
  local lsp = require("spec_lsp.lsp")
  R.observe("filetypes", {
    text_attached = R.client(text_buf) ~= nil,
    commit_wanted = lsp.wants(commit_buf),
    commit_attached = R.client(commit_buf) ~= nil,
  })
  api.nvim_set_current_buf(bufnr)

  R.step(":SpecLsp restart")
  vim.cmd("SpecLsp restart")
  local again = R.wait_ready(bufnr, spec.ready_timeout_ms)
  R.observe("restart", { new_client = again.id ~= client.id, old_stopped = client:is_stopped() })
  vim.notify = notify
end
