-- The plugin's keys and gates against the in-process stand-in server (mock_server.lua), for the
-- ui in spec.ui: <Tab> falling through to a non-expr Lua callback that edits text (a snippet
-- jump), mapped before setup (once E565 inside spec-lsp's expr mapping) and then one mapped after
-- attach (looked up when <Tab> is pressed); `hide_during_completion` (Neovim's popup menu, a
-- blink.cmp-like menu); the per-buffer switch; `should_attach`; and (builtin ui) the Neovim
-- internals the plugin uses.
local api = vim.api

return function(R, spec)
  local server = require("spec_lsp_test.mock_server").new()
  require("spec_lsp.lsp").transport = function()
    return server.cmd
  end
  local jumps = { before = 0, after = 0 }
  local function snippet_jump(which, text)
    return function()
      jumps[which] = jumps[which] + 1
      api.nvim_put({ text }, "c", false, true)
    end
  end
  vim.keymap.set("i", "<Tab>", snippet_jump("before", "BEFORE"), { desc = "a snippet jump" })
  local hook_calls = {}
  local spec_lsp = require("spec_lsp")
  spec_lsp.setup({
    ui = spec.ui,
    debounce_ms = 20,
    should_attach = function(bufnr, client)
      local name = api.nvim_buf_get_name(bufnr)
      hook_calls[#hook_calls + 1] = { name = vim.fs.basename(name), client = client ~= nil }
      return not name:find("secret", 1, true)
    end,
  })
  local ns = api.nvim_create_namespace(spec.namespace)
  local function marks(bufnr)
    return #api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, {})
  end
  local function ghost_in(bufnr, what)
    return R.wait(10000, what or "ghost text", function()
      return marks(bufnr) > 0
    end)
  end
  local function rest() -- several debounces (Neovim's own is 200 ms)
    R.sleep(700)
  end

  vim.cmd.edit(vim.fn.fnameescape(spec.file))
  local bufnr = api.nvim_get_current_buf()
  local client = R.wait(30000, "the stand-in client to attach", function()
    return R.client(bufnr)
  end)

  R.step("ghost text from the stand-in")
  R.feed("Go")
  R.type(bufnr, "x = ")
  ghost_in(bufnr)

  if spec.ui == "builtin" then
    R.step("the Neovim internals the builtin ui relies on")
    local internals = require("spec_lsp.internals")
    local asked = #server.asked
    local shown = #(server.notes["spec-lsp/didShowCompletion"] or {})
    R.observe("internals", {
      problems = internals.check(bufnr, client),
      namespace_has_ghost = #api.nvim_buf_get_extmarks(bufnr, internals.namespace, 0, -1, {}) > 0,
      shown_reported = shown > 0, -- the request wrap saw Neovim's own answer
      asked_again = internals.ask_again(bufnr)
        and R.wait(5000, "the request ask_again makes", function()
          return #server.asked > asked
        end),
    })
  end

  --- Press <Tab> with no ghost text; what it did.
  local function tab_without_ghost()
    R.type(bufnr, "<CR>")
    R.wait(5000, "no ghost text", function()
      return marks(bufnr) == 0
    end)
    vim.v.errmsg = ""
    local before = R.snapshot(bufnr)
    R.feed("<Tab>")
    R.wait(5000, "<Tab> to do something", function()
      return R.snapshot(bufnr).text ~= before.text or vim.v.errmsg ~= ""
    end)
    return {
      before = before,
      after = R.snapshot(bufnr),
      jumps = vim.deepcopy(jumps),
      errmsg = vim.v.errmsg,
      mode = api.nvim_get_mode().mode,
    }
  end

  R.step("<Tab> with no ghost text: the non-expr callback mapped before setup, editing text")
  server.ghost = nil
  R.observe("snippet_tab_before", tab_without_ghost())

  R.step("<Tab> with no ghost text: a non-expr callback mapped after attach")
  vim.keymap.set("i", "<Tab>", snippet_jump("after", "JUMP"), { desc = "a snippet jump" })
  R.observe("snippet_tab", tab_without_ghost())

  R.step("<Tab> with ghost text accepts it, not the callback")
  server.ghost = "GHOST"
  R.type(bufnr, " ")
  ghost_in(bufnr)
  local before = R.snapshot(bufnr)
  R.feed("<Tab>")
  R.wait(5000, "the accept", function()
    return R.snapshot(bufnr).text ~= before.text
  end)
  R.observe("accept_tab", { before = before, after = R.snapshot(bufnr), jumps = jumps })
  vim.keymap.del("i", "<Tab>")

  R.step("hide_during_completion: Neovim's popup menu")
  vim.o.completeopt = "menuone,noselect" -- typing filters the menu, which stays open
  vim.keymap.set("i", "<F5>", "<Cmd>call complete(col('.'), ['alpha', 'alphabet'])<CR>")
  R.type(bufnr, "<CR>")
  ghost_in(bufnr)
  R.feed("<F5>")
  R.wait(5000, "the popup menu", function()
    return vim.fn.pumvisible() == 1
  end)
  local hidden = R.wait(5000, "the ghost text to go", function()
    return marks(bufnr) == 0
  end)
  local asked = #server.asked
  R.feed("a")
  rest()
  local pum = {
    hidden = hidden,
    pum_open = vim.fn.pumvisible() == 1,
    asked_under_menu = #server.asked - asked,
    marks_under_menu = marks(bufnr),
    visible = spec_lsp.visible(bufnr),
  }
  R.feed("<C-e>")
  R.type(bufnr, "b")
  pum.back = ghost_in(bufnr, "the ghost text back after the menu")
  R.observe("pum", pum)

  R.step("hide_during_completion: a completion plugin's menu (blink.cmp's API and event)")
  local fake = { open = true }
  package.loaded["blink.cmp"] = {
    is_menu_visible = function()
      return fake.open
    end,
  }
  api.nvim_exec_autocmds("User", { pattern = "BlinkCmpMenuOpen" })
  hidden = R.wait(5000, "the ghost text to go", function()
    return marks(bufnr) == 0
  end)
  asked = #server.asked
  R.type(bufnr, "c")
  rest()
  local blink = { hidden = hidden, asked_under_menu = #server.asked - asked, marks = marks(bufnr) }
  fake.open = false
  R.type(bufnr, "d")
  blink.back = ghost_in(bufnr, "the ghost text back after the plugin's menu")
  R.observe("blink", blink)
  package.loaded["blink.cmp"] = nil

  R.step("hide_during_completion = false: the ghost text stays under the menu")
  require("spec_lsp.config").options.hide_during_completion = false
  R.type(bufnr, "<CR>")
  ghost_in(bufnr)
  R.feed("<F5>")
  R.wait(5000, "the popup menu", function()
    return vim.fn.pumvisible() == 1
  end)
  rest()
  R.observe("pum_not_hidden", { pum_open = vim.fn.pumvisible() == 1, marks = marks(bufnr) })
  R.feed("<C-e>")
  require("spec_lsp.config").options.hide_during_completion = true
  R.feed("<Esc>")

  R.step(":SpecLsp disable buffer: nothing asked there; another buffer still suggests")
  local messages = {}
  local notify = vim.notify
  vim.notify = function(msg) ---@diagnostic disable-line: duplicate-set-field
    messages[#messages + 1] = msg
  end
  vim.cmd("SpecLsp disable buffer")
  local off = {
    var = vim.b[bufnr].spec_lsp_enabled,
    statusline = spec_lsp.statusline(),
    global = spec_lsp.enabled,
  }
  asked = server.asked_in(bufnr)
  R.feed("o")
  R.type(bufnr, "y = ")
  rest()
  off.asked = server.asked_in(bufnr) - asked
  off.marks = marks(bufnr)
  R.feed("<Esc>")
  vim.cmd.edit(vim.fn.fnameescape(vim.fs.dirname(spec.file) .. "/other.py"))
  local other = api.nvim_get_current_buf()
  R.wait(10000, "the other buffer to attach", function()
    return R.client(other)
  end)
  off.other_statusline = spec_lsp.statusline()
  R.feed("i")
  R.type(other, "z = ")
  off.other_ghost = ghost_in(other, "ghost text in the other buffer")
  R.feed("<Esc>")
  R.observe("buffer_off", off)

  R.step(":SpecLsp toggle buffer: on again")
  vim.cmd.buffer(bufnr)
  vim.cmd("SpecLsp toggle buffer")
  local on = { var = vim.b[bufnr].spec_lsp_enabled, statusline = spec_lsp.statusline() }
  R.feed("o")
  R.type(bufnr, "w = ")
  on.ghost = ghost_in(bufnr, "ghost text once the buffer is on again")
  R.feed("<Esc>")
  R.observe("buffer_on", on)

  R.step("vim.b.spec_lsp_enabled = false set directly")
  vim.b[bufnr].spec_lsp_enabled = false
  asked = server.asked_in(bufnr)
  R.feed("o")
  R.type(bufnr, "v = ")
  rest()
  R.observe("buffer_var", { asked = server.asked_in(bufnr) - asked, marks = marks(bufnr) })
  R.feed("<Esc>")
  vim.b[bufnr].spec_lsp_enabled = nil
  vim.notify = notify
  R.observe("messages", messages)

  R.step("should_attach")
  vim.cmd.edit(vim.fn.fnameescape(vim.fs.dirname(spec.file) .. "/secret.py"))
  local secret = api.nvim_get_current_buf()
  R.observe("should_attach", {
    secret_attached = R.client(secret) ~= nil,
    other_attached = R.client(other) ~= nil,
    calls = hook_calls,
  })
end
