-- `editor_definitions = true` against the real server (tests/server/prompt_server.py: the tiny
-- pair, each prompt written to spec.prompts) and a second language server,
-- tests/editors/fake_definition_server.py. Types a call of `rect_area` (a name only the fake
-- server knows), pauses so that the plugin sends what the fake answered and the server's context
-- may change, then types on until a prompt holds the definition (bounded); pytest reads the
-- prompts.
local api = vim.api

local function prompts_hold(path, text)
  local ok, lines = pcall(vim.fn.readfile, path)
  if not ok then
    return false
  end
  for _, line in ipairs(lines) do
    if line:find(text, 1, true) then
      return true
    end
  end
  return false
end

return function(R, spec)
  vim.cmd.edit(vim.fn.fnameescape(spec.file))
  local bufnr = api.nvim_get_current_buf()
  R.wait_ready(bufnr, spec.ready_timeout_ms)
  local id = vim.lsp.start({
    name = "fake_definitions",
    cmd = { spec.python, spec.fake_server, "--target", spec.target, "--log", spec.fake_log },
    root_dir = vim.fs.dirname(spec.file),
  }, { bufnr = bufnr })
  R.wait(30000, "the fake definition server to attach", function()
    local client = id and vim.lsp.get_client_by_id(id)
    return client and client.initialized and vim.lsp.buf_is_attached(bufnr, id)
  end)

  R.step("a call of rect_area, a pause, then typing until a prompt holds its definition")
  R.feed("Go")
  R.type(bufnr, "total = rect_area(")
  local typed, deadline = 0, vim.uv.now() + 120000
  while not prompts_hold(spec.prompts, "rect_area(width: float") do
    if vim.uv.now() > deadline then
      error(("no prompt held rect_area's definition after %d keys"):format(typed), 0)
    end
    R.sleep(1500) -- a pause: the plugin asks and sends, the server's context may change
    typed = typed + 1
    R.type(bufnr, typed % 2 == 1 and "w" or "<BS>")
  end
  R.observe("typed", typed)
  R.feed("<Esc>")
end
