-- An in-process stand-in for `spec-lsp serve` (no process, no model): a `cmd` function for
-- vim.lsp.start / vim.lsp.config. It answers every textDocument/inlineCompletion with one item,
-- `server.ghost` at the cursor (nil: no item), and keeps a log of what the plugin sent.
local M = {}

function M.new()
  local server = {
    ghost = "GHOST", -- the text of the one item; nil: answer no item
    asked = {}, -- textDocument/inlineCompletion params, in order
    notes = {}, -- notification method -> list of params
  }

  --- The inline completion requests for `bufnr` so far.
  function server.asked_in(bufnr)
    local uri, n = vim.uri_from_bufnr(bufnr), 0
    for _, params in ipairs(server.asked) do
      n = n + (params.textDocument.uri == uri and 1 or 0)
    end
    return n
  end

  local handlers = {
    initialize = function()
      return {
        capabilities = {
          textDocumentSync = { openClose = true, change = 2 },
          inlineCompletionProvider = true,
          executeCommandProvider = { commands = { "spec-lsp.didAcceptCompletion" } },
        },
      }
    end,
    ["spec-lsp/status"] = function()
      return { state = "ready", preset = "mock", device = "lua" }
    end,
    ["textDocument/inlineCompletion"] = function(params)
      table.insert(server.asked, params)
      if not server.ghost then
        return { items = {} }
      end
      -- No range (insert at the cursor): Neovim 0.12 takes an automatic request's position from
      -- the current window, which may show another buffer by the time its debounce runs out.
      local id = "mock-" .. #server.asked
      return {
        items = {
          {
            insertText = server.ghost,
            command = {
              title = "accepted",
              command = "spec-lsp.didAcceptCompletion",
              arguments = { { id = id } },
            },
          },
        },
      }
    end,
  }

  local next_id = 0
  server.cmd = function(dispatchers)
    local closing = false
    return {
      request = function(method, params, callback, notify_reply)
        next_id = next_id + 1
        local id = next_id
        local handler = handlers[method]
        vim.schedule(function()
          if closing then
            return
          end
          callback(nil, handler and handler(params) or vim.NIL)
          if notify_reply then
            notify_reply(id)
          end
        end)
        return true, id
      end,
      notify = function(method, params)
        server.notes[method] = server.notes[method] or {}
        table.insert(server.notes[method], params)
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

return M
