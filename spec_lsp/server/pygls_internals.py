"""Every use of pygls's non-public names, in one place to re-check on each pygls upgrade.

pygls 2.1 has no public hook for what the server needs before a handler runs, so it overrides
or reads these names of `JsonRPCProtocol` / `LanguageServerProtocol` (pygls/protocol/):

- `_handle_request`, `_handle_notification`: the LSP's initialize order (a request before
  `initialize` is answered ServerNotInitialized, a notification other than `exit` dropped, a
  second `initialize` an InvalidRequest), and a request's arrival noted as it is read;
- `_send_response`: the answer to a refused or malformed request;
- `_server`: the server object a protocol belongs to (its `before_request` hook);
- `_request_futures`: a closed session's requests, cancelled;
- `_shutdown`: whether `shutdown` came before `exit` (the exit code).

It also replaces pygls's built-in `initialize`, `didOpen`, `didChange` and `didClose` handlers
(`lsp_method` overrides of `LanguageServerProtocol`): next edit advertised under
`experimental`, and pygls's own copy of each document skipped. tests/server/test_pygls_internals.py
checks that no other module of the package reaches a pygls object's non-public name.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest, JsonRpcServerNotInitialized
from pygls.protocol import LanguageServerProtocol, lsp_method

from spec_lsp.nextedit import wire as edit_wire

log = logging.getLogger(__name__)


class RequestHook(Protocol):
    """What the protocol calls on its server as a request is read (before its handler runs)."""

    def before_request(self, method: str, params: Any) -> None: ...


class _MalformedRequest:
    """A request whose params failed validation; the protocol already answered it."""

    jsonrpc = "2.0"


class SpecProtocol(LanguageServerProtocol):
    """Answers a request with malformed params with InvalidParams instead of dropping it, and
    accepts messages without `params` (JSON-RPC lets them be omitted; pygls requires the key).

    As the LSP spec asks: before `initialize`, a request is answered ServerNotInitialized and a
    notification other than `exit` is dropped; a second `initialize` is an InvalidRequest."""

    initialize_seen = False

    def structure_message(self, data: dict[str, Any]) -> Any:
        if isinstance(data, dict) and "method" in data and "params" not in data:
            data = {**data, "params": None}
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "id" in data and "method" in data:
                self._send_response(data["id"], None, exc.to_response_error())
            log.warning("malformed %r: %s", data.get("method", "message"), exc)
            return _MalformedRequest()

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _MalformedRequest):
            return
        super().handle_message(message)

    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        refusal: JsonRpcException | None = None
        if method_name == types.INITIALIZE:
            if self.initialize_seen:
                refusal = JsonRpcInvalidRequest("initialize may be sent only once")
            self.initialize_seen = True
        elif not self.initialize_seen:
            refusal = JsonRpcServerNotInitialized(f"{method_name} before initialize")
        if refusal is not None:
            log.warning("refused %r: %s", method_name, refusal.message)
            self._send_response(msg_id, None, refusal.to_response_error())
            return
        # Runs as the message is read, in the context the handler's task will copy.
        cast(RequestHook, self._server).before_request(method_name, params)
        super()._handle_request(msg_id, method_name, params)

    def _handle_notification(self, method_name: str, params: Any) -> None:
        if not self.initialize_seen and method_name != types.EXIT:
            log.warning("dropped %r before initialize", method_name)
            return
        super()._handle_notification(method_name, params)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        """pygls' initialize, with next edit advertised under `experimental` (Copilot's clients
        do not look for it; others may)."""
        result = yield from super().lsp_initialize(params)
        next_edit = {
            "method": edit_wire.METHOD,
            "didShow": edit_wire.DID_SHOW,
            "didReject": edit_wire.DID_REJECT,
            "acceptCommand": edit_wire.ACCEPT_COMMAND,
        }
        result.capabilities.experimental = {"copilotInlineEdit": True, "nextEdit": next_edit}
        return result

    # The service keeps the documents. pygls' own copy (its workspace) is skipped: it doubled
    # the memory of every document, and it rewrote a change's range in place before our handler
    # saw it (a position past the end of the last line became its length minus one).
    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


def cancel_requests(protocol: LanguageServerProtocol) -> None:
    """Cancels every request of `protocol` still in flight (their answers would go nowhere)."""
    for future in list(protocol._request_futures.values()):
        future.cancel()


def shutdown_requested(protocol: LanguageServerProtocol) -> bool:
    """Whether the client sent `shutdown` (before its `exit`)."""
    return bool(protocol._shutdown)
