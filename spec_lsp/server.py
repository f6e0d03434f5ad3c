"""The language server: LSP handlers and the conversions between lsprotocol types and ours.

This is the only module that imports pygls and lsprotocol. Handlers are named after the LSP
method they serve; each converts its params, calls the completion service, and converts back.
Everything else (scheduling, prompts, models) lives behind `CompletionService`.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib.metadata
import itertools
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from spec_lsp.completion import Arrival, CompletionService, Suggestion
from spec_lsp.config import Options, merge, settings_section
from spec_lsp.engine.api import Backend
from spec_lsp.worker import InferenceWorker, Loader, ProgressFn

log = logging.getLogger(__name__)

try:
    VERSION = importlib.metadata.version("spec-lsp")
except importlib.metadata.PackageNotFoundError:
    VERSION = "0.0.0"

ACCEPT_COMMAND = "spec-lsp.didAcceptCompletion"
STATS = "spec-lsp/stats"
STATUS = "spec-lsp/status"
DID_SHOW = "spec-lsp/didShowCompletion"
DID_ACCEPT = "spec-lsp/didAcceptCompletion"
DID_PARTIALLY_ACCEPT = "spec-lsp/didPartiallyAcceptCompletion"
EXIT_GRACE_S = 3.0  # after `exit`, the process is ended even if a thread still blocks

LoaderFactory = Callable[[Options], Loader]
COMPLETION_METHODS = (types.TEXT_DOCUMENT_INLINE_COMPLETION, types.TEXT_DOCUMENT_COMPLETION)
ARRIVAL: contextvars.ContextVar[Arrival | None] = contextvars.ContextVar("arrival", default=None)


def engine_loader(options: Options) -> Loader:
    """Loads the local engine (torch is imported here, in the worker thread, not at start)."""

    def load(progress: ProgressFn) -> Backend:
        from spec_lsp.engine.loading import load_engine

        return load_engine(
            options.preset,
            device=options.device,
            trust_remote_code=options.trust_remote_code,
            progress=progress,
        )

    return load


class _MalformedRequest:
    """A request whose params failed validation; the protocol already answered it."""

    jsonrpc = "2.0"


class SpecProtocol(LanguageServerProtocol):
    """Answers a request with malformed params with InvalidParams instead of dropping it, and
    accepts messages without `params` (JSON-RPC lets them be omitted; pygls requires the key)."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        if isinstance(data, dict) and "method" in data and "params" not in data:
            data = {**data, "params": None}
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "id" in data and "method" in data:
                self._send_response(data["id"], None, exc.to_response_error())
            log.warning("malformed %s: %s", data.get("method", "message"), exc)
            return _MalformedRequest()

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _MalformedRequest):
            return
        super().handle_message(message)

    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        # Runs as the message is read, in the context the handler's task will copy: note the
        # document version now, before edits read after this request are applied.
        service = self._server.service  # type: ignore[attr-defined]
        if method_name in COMPLETION_METHODS and service is not None:
            uri = getattr(getattr(params, "text_document", None), "uri", None)
            if isinstance(uri, str):
                ARRIVAL.set(service.arrive(uri))
        super()._handle_request(msg_id, method_name, params)


class SpecServer(LanguageServer):
    def __init__(
        self, preset: str = "bundled", device: str = "auto", loader: LoaderFactory | None = None
    ) -> None:
        super().__init__(
            "spec-lsp",
            VERSION,
            protocol_cls=SpecProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.options = Options(preset=preset, device=device)
        self.loader = loader or engine_loader
        self.service: CompletionService | None = None
        self.worker: InferenceWorker | None = None
        self.pending_warnings: list[str] = []
        self._progress_ids = itertools.count(1)

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Errors caused by client input are answered or logged; never a popup per keystroke.
        log.error("%s: %s", getattr(source, "__name__", source), error)

    @property
    def encoding(self) -> str:
        enc = self.workspace.position_encoding
        return str(getattr(enc, "value", enc) or "utf-16")

    def warn(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        log.warning("%s", message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def status(self) -> dict[str, Any]:
        worker = self.worker
        state = "loading" if worker is None else worker.state
        if not self.options.enabled:
            state = "disabled"
        info = worker.info if worker is not None else None
        return {
            "state": state,
            "preset": info.preset if info and info.preset else self.options.preset,
            "device": info.device if info and info.device else self.options.device,
            "error": worker.error if worker is not None else None,
            "target": info.target if info else "",
            "draft": info.draft if info else None,
        }

    async def load_models(self) -> None:
        """Loads the configured preset in the worker, reporting $/progress when supported."""
        assert self.worker is not None and self.service is not None
        token: str | None = None
        if _supports_progress(self.client_capabilities):
            token = f"spec-lsp/load/{next(self._progress_ids)}"
            try:
                await asyncio.wait_for(self.work_done_progress.create_async(token), 10)
                self.work_done_progress.begin(
                    token,
                    types.WorkDoneProgressBegin(
                        title="spec-lsp", message=f"loading {self.options.preset}", percentage=0
                    ),
                )
            except Exception:
                log.warning("client refused work done progress", exc_info=True)
                token = None
        done = asyncio.get_running_loop().create_future()

        def progress(message: str, fraction: float) -> None:
            if token is not None:
                pct = max(0, min(100, int(fraction * 100)))
                self.work_done_progress.report(
                    token, types.WorkDoneProgressReport(message=message, percentage=pct)
                )

        self.worker.load(
            self.options.preset, self.loader(self.options), progress, lambda: done.set_result(None)
        )
        await done
        worker = self.worker
        if token is not None:
            message = "ready" if worker.state == "ready" else "failed"
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
        if worker.state == "ready":
            self.service.model_ready()
            log.info("models ready: %s", worker.info)
        else:
            self.warn(
                f"spec-lsp: could not load preset {self.options.preset!r}: {worker.error}",
                types.MessageType.Error,
            )


def _supports_progress(caps: types.ClientCapabilities) -> bool:
    return bool(caps.window and caps.window.work_done_progress)


def _param(params: Any, key: str) -> Any:
    """`params[key]` for dict or attribute params; None when params are missing or null."""
    if params is None:
        return None
    if isinstance(params, dict):
        return params.get(key)
    return getattr(params, key, None)


def _suggestion_id(params: Any) -> str | None:
    sid = _param(params, "id")
    return None if sid is None else str(sid)


# -- conversions --------------------------------------------------------------------------------
def lsp_inline_item(suggestion: Suggestion, position: types.Position) -> types.InlineCompletionItem:
    return types.InlineCompletionItem(
        insert_text=suggestion.text,
        range=types.Range(start=position, end=position),
        command=types.Command(
            title="spec-lsp: accepted", command=ACCEPT_COMMAND, arguments=[{"id": suggestion.id}]
        ),
    )


def lsp_completion_item(suggestion: Suggestion, position: types.Position) -> types.CompletionItem:
    first_line = suggestion.text.split("\n", 1)[0].strip() or suggestion.text.strip()
    return types.CompletionItem(
        label=first_line[:80] or "…",
        kind=types.CompletionItemKind.Text,
        detail="spec-lsp",
        documentation=types.MarkupContent(kind=types.MarkupKind.PlainText, value=suggestion.text),
        text_edit=types.TextEdit(
            range=types.Range(start=position, end=position), new_text=suggestion.text
        ),
        filter_text="",
        sort_text="0",
        command=types.Command(
            title="spec-lsp: accepted", command=ACCEPT_COMMAND, arguments=[{"id": suggestion.id}]
        ),
    )


def lsp_change(
    change: types.TextDocumentContentChangeEvent,
) -> tuple[tuple[int, int, int, int] | None, str]:
    if isinstance(change, types.TextDocumentContentChangePartial):
        r = change.range
        return (r.start.line, r.start.character, r.end.line, r.end.character), change.text
    return None, change.text


# -- handlers -----------------------------------------------------------------------------------
def build_server(
    preset: str = "bundled", device: str = "auto", loader: LoaderFactory | None = None
) -> SpecServer:
    server = SpecServer(preset, device, loader)

    @server.feature(types.INITIALIZE)
    def initialize(ls: SpecServer, params: types.InitializeParams) -> None:
        ls.options, ls.pending_warnings = merge(ls.options, params.initialization_options)
        ls.worker = InferenceWorker(asyncio.get_running_loop())
        ls.service = CompletionService(ls.worker, ls.options)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: SpecServer, params: types.InitializedParams) -> None:
        for message in ls.pending_warnings:
            ls.warn(message)
        ls.pending_warnings = []
        await ls.load_models()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def text_document_did_open(ls: SpecServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        if ls.service is not None:
            ls.service.did_open(doc.uri, doc.language_id, doc.version, doc.text)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def text_document_did_change(ls: SpecServer, params: types.DidChangeTextDocumentParams) -> None:
        if ls.service is None:
            return
        doc = params.text_document
        changes = [lsp_change(c) for c in params.content_changes]
        if not ls.service.did_change(doc.uri, doc.version, changes, ls.encoding):
            log.warning("didChange for a document that is not open: %s", doc.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def text_document_did_close(ls: SpecServer, params: types.DidCloseTextDocumentParams) -> None:
        if ls.service is not None:
            ls.service.did_close(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def text_document_inline_completion(
        ls: SpecServer, params: types.InlineCompletionParams
    ) -> types.InlineCompletionList:
        suggestion = await _complete(ls, params.text_document.uri, params.position)
        items = [] if suggestion is None else [lsp_inline_item(suggestion, params.position)]
        return types.InlineCompletionList(items=items)

    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions())
    async def text_document_completion(
        ls: SpecServer, params: types.CompletionParams
    ) -> types.CompletionList:
        suggestion = await _complete(ls, params.text_document.uri, params.position)
        items = [] if suggestion is None else [lsp_completion_item(suggestion, params.position)]
        return types.CompletionList(is_incomplete=True, items=items)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def workspace_did_change_configuration(
        ls: SpecServer, params: types.DidChangeConfigurationParams
    ) -> None:
        section = settings_section(params.settings)
        if section is None:
            return
        options, warnings = merge(ls.options, section)
        for message in warnings:
            ls.warn(message)
        reload = options.model_key() != ls.options.model_key()
        ls.options = options
        if ls.service is None:
            return
        ls.service.set_options(options)
        if reload:
            await ls.load_models()

    @server.command(ACCEPT_COMMAND)
    def did_accept_command(ls: SpecServer, *args: Any) -> None:
        sid = _suggestion_id(args[0]) if args else None
        if ls.service is not None and sid is not None:
            ls.service.did_accept(sid)

    @server.feature(DID_SHOW)
    def spec_lsp_did_show_completion(ls: SpecServer, params: Any) -> None:
        sid = _suggestion_id(params)
        if ls.service is not None and sid is not None:
            ls.service.did_show(sid)

    @server.feature(DID_ACCEPT)
    def spec_lsp_did_accept_completion(ls: SpecServer, params: Any) -> None:
        sid = _suggestion_id(params)
        if ls.service is not None and sid is not None:
            ls.service.did_accept(sid)

    @server.feature(DID_PARTIALLY_ACCEPT)
    def spec_lsp_did_partially_accept_completion(ls: SpecServer, params: Any) -> None:
        sid, length = _suggestion_id(params), _param(params, "acceptedLength")
        if ls.service is not None and sid is not None and isinstance(length, int):
            ls.service.did_partially_accept(sid, length)

    @server.feature(STATS)
    def spec_lsp_stats(ls: SpecServer, params: Any) -> dict[str, Any]:
        if ls.service is None:
            raise JsonRpcInvalidParams("spec-lsp/stats before initialize")
        status = ls.status()
        model = {k: status[k] for k in ("preset", "device", "state")}
        return ls.service.stats_wire(model)

    @server.feature(STATUS)
    def spec_lsp_status(ls: SpecServer, params: Any) -> dict[str, Any]:
        return ls.status()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: SpecServer, params: Any) -> None:
        if ls.worker is not None:
            ls.worker.stop()

    @server.feature(types.EXIT)
    def exit_(ls: SpecServer, params: Any) -> None:
        code = 0 if ls.protocol._shutdown else 1
        timer = threading.Timer(EXIT_GRACE_S, os._exit, args=(code,))
        timer.daemon = True
        timer.start()

    return server


async def _complete(ls: SpecServer, uri: str, position: types.Position) -> Suggestion | None:
    if ls.service is None:
        return None
    arrival = ARRIVAL.get()
    return await ls.service.complete(uri, position.line, position.character, ls.encoding, arrival)
