-- A remote preset whose engine does not answer (a closed port): typing gets no ghost text, the
-- server's status says why, and :SpecLspStats and :checkhealth spec_lsp show that reason.
local api = vim.api

return function(R, spec)
  vim.cmd.edit(vim.fn.fnameescape(spec.file))
  local bufnr = api.nvim_get_current_buf()
  local client, status = R.wait_ready(bufnr, spec.ready_timeout_ms)
  R.observe("status_before", status)

  R.step("type " .. spec.typed .. " (the requests reach a closed port)")
  R.feed("Go")
  R.type(bufnr, spec.typed)
  local failing = R.wait(30000, "spec-lsp/status to say the engine fails", function()
    local s = R.request(client, "spec-lsp/status")
    return type(s.engine) == "table" and s.engine.available == false and s or nil
  end)
  R.observe("status", failing)
  vim.cmd("stopinsert")

  R.step(":SpecLspStats")
  vim.cmd("SpecLspStats")
  local float = R.wait(10000, "the stats float", function()
    return R.floats()[1]
  end)
  R.observe("stats_float", float.lines)
  api.nvim_win_close(float.win, true)

  R.step(":checkhealth spec_lsp")
  vim.cmd("checkhealth spec_lsp")
  R.wait(60000, "the health report", function()
    local text = table.concat(api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    return text:find("spec%-lsp") and text:find("server running") and text
  end)
  R.observe("health", api.nvim_buf_get_lines(0, 0, -1, false))
  vim.cmd("tabclose")
end
