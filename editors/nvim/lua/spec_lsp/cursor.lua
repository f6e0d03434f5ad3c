--- Tells the server where the cursor rests (`spec-lsp/didMoveCursor`), so that it prefills the
--- prompt of a request there before the first key: a file opened deep in its text otherwise
--- waits for its whole prompt window at the first key (seconds for the default pair on a CPU).
--- Sent once the cursor has rested `delay` ms after moving in normal mode, entering a buffer or
--- entering insert mode; not while typing (each key asks for a suggestion anyway).

local api = vim.api

local M = {}

--- ms the cursor rests before the server hears of it
M.delay = 300

local timers = {} ---@type table<integer, uv.uv_timer_t>

---@param client vim.lsp.Client
---@param bufnr integer
local function send(client, bufnr)
  if client:is_stopped() or not api.nvim_buf_is_valid(bufnr) then
    return
  end
  if api.nvim_get_current_buf() ~= bufnr or api.nvim_get_mode().mode:sub(1, 1) == "c" then
    return
  end
  -- No version: the server takes its own copy's, which every earlier change has reached.
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  client:notify("spec-lsp/didMoveCursor", params)
end

--- Sends the cursor of `bufnr` to `client` whenever it rests there.
---@param bufnr integer
---@param client vim.lsp.Client
function M.attach(bufnr, client)
  M.detach(bufnr)
  local timer = assert(vim.uv.new_timer())
  timers[bufnr] = timer
  local group = api.nvim_create_augroup("spec_lsp_cursor_" .. bufnr, { clear = true })
  local function rested()
    timer:stop()
    timer:start(
      M.delay,
      0,
      vim.schedule_wrap(function()
        send(client, bufnr)
      end)
    )
  end
  api.nvim_create_autocmd({ "CursorMoved", "BufEnter", "InsertEnter" }, {
    group = group,
    buffer = bufnr,
    callback = rested,
  })
  api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = bufnr,
    callback = function()
      M.detach(bufnr)
    end,
  })
  rested() -- where the cursor is now, if it stays (the buffer may be open for a while)
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
  pcall(api.nvim_del_augroup_by_name, "spec_lsp_cursor_" .. bufnr)
end

return M
