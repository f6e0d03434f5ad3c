-- :SpecLspRecord {file} restarts the server under `spec-lsp record`; typing and accepting then
-- land in the session file; :SpecLspRecord with no file goes back to the plain server.
local api = vim.api

return function(R, spec)
  local ns = api.nvim_create_namespace(spec.namespace)
  vim.cmd.edit(vim.fn.fnameescape(spec.file))
  local bufnr = api.nvim_get_current_buf()
  local first = R.wait_ready(bufnr, spec.ready_timeout_ms)

  R.step(":SpecLspRecord " .. spec.session)
  vim.cmd("SpecLspRecord " .. vim.fn.fnameescape(spec.session))
  local recording, status = R.wait_ready(bufnr, spec.ready_timeout_ms)
  R.observe("recording_cmd", recording.config.cmd)
  R.observe("restarted", recording.id ~= first.id and first:is_stopped())
  R.observe("status", status)

  R.step("type and accept while recording")
  R.feed("Go")
  R.type(bufnr, spec.typed)
  local ghost = R.wait(spec.ghost_timeout_ms, "ghost text while recording", function()
    local g = R.ghost(bufnr, ns)
    return g and g.text ~= "" and g or nil
  end)
  R.accept_all(bufnr, ghost)
  vim.cmd("stopinsert")

  R.step(":SpecLspRecord (stop)")
  vim.cmd("SpecLspRecord")
  local plain = R.wait_ready(bufnr, spec.ready_timeout_ms)
  R.observe("plain_cmd", plain.config.cmd)
  R.observe("recorder_stopped", recording:is_stopped())
end
