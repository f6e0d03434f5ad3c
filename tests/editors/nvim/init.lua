-- Minimal init for the headless end-to-end tests: only the spec-lsp plugin and the test helpers
-- on the runtimepath. The test's settings come as JSON in $SPEC_LSP_TEST (see test_nvim.py).
local spec = vim.json.decode((assert(os.getenv("SPEC_LSP_TEST"), "SPEC_LSP_TEST is not set")))

local ok, err = xpcall(function()
  vim.opt.runtimepath:prepend(spec.plugin_dir)
  vim.opt.runtimepath:prepend(spec.helper_dir)
  vim.cmd("runtime! plugin/spec_lsp.lua")
  vim.o.swapfile = false
  vim.o.columns = 100
  vim.o.lines = 30
  if spec.prior_tab then
    -- an insert-mode <Tab> mapped before spec-lsp's setup, as nvim-cmp or a snippet plugin does
    vim.keymap.set("i", "<Tab>", function()
      vim.g.spec_lsp_fallback = (vim.g.spec_lsp_fallback or 0) + 1
      return "FALLBACK"
    end, { expr = true })
  end
  if spec.setup ~= vim.NIL then -- vim.NIL: no setup{}, the scenario configures Neovim itself
    require("spec_lsp").setup(spec.setup)
  end
end, debug.traceback)

if not ok then
  local failure = vim.json.encode({ error = "init failed: " .. err, observations = {} })
  vim.fn.writefile({ failure }, spec.out)
  vim.cmd("cquit 3")
end

vim.schedule(function()
  require("spec_lsp_test.runner").run(spec)
end)
