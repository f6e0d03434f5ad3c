-- `editor_definitions = true` against the in-process stand-in spec-lsp (mock_server.lua, which
-- logs every notification) and a second language server, tests/editors/fake_definition_server.py
-- (a process; it answers definition and hover for `rect_area`). Typing with no other server
-- attached sends nothing; with it, a pause sends one `spec-lsp/definitions` holding what it
-- answered; a buffer attached after the option is turned off sends nothing.
local api = vim.api

return function(R, spec)
  local server = require("spec_lsp_test.mock_server").new()
  require("spec_lsp.lsp").transport = function()
    return server.cmd
  end
  require("spec_lsp").setup({ ui = "virtual_text", debounce_ms = 20, editor_definitions = true })
  local function sent()
    return server.notes["spec-lsp/definitions"] or {}
  end
  local function fake_on(bufnr)
    local id = vim.lsp.start({
      name = "fake_definitions",
      cmd = { spec.python, spec.fake_server, "--target", spec.target, "--log", spec.fake_log },
      root_dir = vim.fs.dirname(spec.file),
    }, { bufnr = bufnr })
    R.wait(30000, "the fake definition server to attach", function()
      local client = id and vim.lsp.get_client_by_id(id)
      return client and client.initialized and vim.lsp.buf_is_attached(bufnr, id)
    end)
  end

  vim.cmd.edit(vim.fn.fnameescape(spec.file))
  local bufnr = api.nvim_get_current_buf()
  R.wait(30000, "the stand-in client to attach", function()
    return R.client(bufnr)
  end)

  R.step("no other server: a pause sends nothing")
  R.feed("Go")
  R.type(bufnr, "total = rect_area(")
  R.sleep(1000)
  R.observe("sent_alone", #sent())

  R.step("with the fake definition server: a pause sends what it answered")
  fake_on(bufnr)
  R.type(bufnr, "2, 3")
  R.wait(10000, "a spec-lsp/definitions notification", function()
    return #sent() > 0
  end)
  R.sleep(500) -- one pause, one notification
  R.observe("sent", vim.deepcopy(sent()))
  R.observe("uri", vim.uri_from_bufnr(bufnr))
  R.observe("version", vim.lsp.util.buf_versions[bufnr])

  R.step("the option turned off: a buffer attached then sends nothing")
  R.feed("<Esc>")
  R.sleep(100)
  require("spec_lsp.config").options.editor_definitions = false
  local other = vim.fs.dirname(spec.file) .. "/other.py"
  vim.cmd.edit(vim.fn.fnameescape(other))
  local off = api.nvim_get_current_buf()
  R.wait(30000, "the stand-in client on the second buffer", function()
    return R.client(off)
  end)
  fake_on(off)
  local before = #sent()
  R.feed("i")
  R.type(off, "area = rect_area(1, 2")
  R.sleep(1500)
  R.observe("sent_off", #sent() - before)
  R.feed("<Esc>")
end
