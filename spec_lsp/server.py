"""The language server: LSP handlers and the conversions between lsprotocol types and ours.

This is the only module that imports pygls and lsprotocol. Handlers are named after the LSP
method they serve; each converts its params, calls the completion service, and converts back.
Everything else (scheduling, prompts, models) lives behind `CompletionService`.

Size: as the only module allowed pygls, it holds both the handlers (`build_server` registers one
small closure per LSP method, 17 of them) and the protocol rules applied before dispatch (the
initialize/exit order, malformed params, skipping pygls' own document copy, stdio serving, and a
shared server's sessions: a fresh protocol per client, the models kept).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import importlib.metadata
import itertools
import json
import logging
import os
import re
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

from lsprotocol import types
from pygls import uris
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcServerNotInitialized,
)
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from spec_lsp.completion import Arrival, CompletionService, Suggestion
from spec_lsp.config import MODEL_FIELDS, Options, camel, merge, settings_section
from spec_lsp.nextedit import wire as edit_wire
from spec_lsp.nextedit.service import NextEdits
from spec_lsp.transport import Connection, serve_clients
from spec_lsp.trust import client_preset_refusal, leave_workspace
from spec_lsp.wire import serve_stream
from spec_lsp.worker import InferenceWorker, Loader, engine_loader

log = logging.getLogger(__name__)

try:
    VERSION = importlib.metadata.version("spec-lsp")
except importlib.metadata.PackageNotFoundError:
    VERSION = "0.0.0"

ACCEPT_COMMAND = "spec-lsp.didAcceptCompletion"
STATS = "spec-lsp/stats"
STATUS = "spec-lsp/status"
DID_SHOW = "spec-lsp/didShowCompletion"
ALTERNATIVES = 3  # distinct suggestions for an explicit (Invoked) inline request
DID_ACCEPT = "spec-lsp/didAcceptCompletion"
DID_PARTIALLY_ACCEPT = "spec-lsp/didPartiallyAcceptCompletion"
DOCUMENT_TEXT = "spec-lsp/documentText"
DID_MOVE_CURSOR = "spec-lsp/didMoveCursor"
EXIT_GRACE_S = 3.0  # after `exit`, the process is ended even if a thread still blocks
INVOKED_LOAD_WAIT_S = 10.0  # an explicitly invoked request waits this long for a loading model

LoaderFactory = Callable[[Options], Loader]
COMPLETION_METHODS = (types.TEXT_DOCUMENT_INLINE_COMPLETION, types.TEXT_DOCUMENT_COMPLETION)
PRESET_NAME = re.compile(r"(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]{0,99}(?<!\.toml)")
ARRIVAL: contextvars.ContextVar[Arrival | None] = contextvars.ContextVar("arrival", default=None)


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
        # Runs as the message is read, in the context the handler's task will copy: note the
        # document version now, before edits read after this request are applied.
        service = self._server.service  # type: ignore[attr-defined]
        if method_name in COMPLETION_METHODS and service is not None:
            uri = getattr(getattr(params, "text_document", None), "uri", None)
            if isinstance(uri, str):
                ARRIVAL.set(service.arrive(uri))
        super()._handle_request(msg_id, method_name, params)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        """pygls' initialize, with next edit advertised under `experimental` (Copilot's clients
        do not look for it; others may)."""
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"copilotInlineEdit": True, "nextEdit": {
            "method": edit_wire.METHOD, "didShow": edit_wire.DID_SHOW,
            "didReject": edit_wire.DID_REJECT, "acceptCommand": edit_wire.ACCEPT_COMMAND,
        }}  # fmt: skip
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

    def _handle_notification(self, method_name: str, params: Any) -> None:
        if not self.initialize_seen and method_name != types.EXIT:
            log.warning("dropped %r before initialize", method_name)
            return
        super()._handle_notification(method_name, params)


class SpecServer(LanguageServer):
    def __init__(
        self,
        preset: str = Options.preset,
        device: str = "auto",
        loader: LoaderFactory | None = None,
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
        self.next_edits: NextEdits | None = None
        self.worker: InferenceWorker | None = None
        self.pending_warnings: list[str] = []
        self.exit_code = 0
        self.loaded = asyncio.Event()  # set while no load is in progress (after the first)
        self.models_key: tuple[object, ...] | None = None  # what the last load was asked for
        self.shared = False  # serving one client after another (`start_shared`)
        self._start_options = self.options
        self._progress_ids = itertools.count(1)

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serves over stdio until `exit`, the end of stdin, or SIGTERM; sets `exit_code`.

        `wire.serve_stream` reads frames in a daemon thread, bounded and resynchronizing after a
        framing error, so a read blocked on stdin never holds the process when it should end."""
        self.options = leave_workspace(self.options)  # the workspace is no place to look things up
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        # Not asyncio.run: its clean-up would cancel a model load or a generation in progress
        # and wait for it; the caller ends the process instead (`serve`'s `leave`).
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(serve_stream(stdin or sys.stdin.buffer, self._handle_body))
        except BrokenPipeError:
            log.error("the client closed the connection")
        except SystemExit as exc:  # `exit`: pygls ends with sys.exit(0 after shutdown, else 1)
            self.exit_code = exc.code if isinstance(exc.code, int) else 1
        finally:
            self.shutdown()

    def start_shared(self, listener: socket.socket, token: str | None) -> None:
        """Serves the clients of `listener` one at a time (`transport.serve_clients`: bounded
        framing, admission by `token`) until SIGTERM or SIGINT. Each connection is a session of
        its own, from `initialize` on, while the models stay loaded for the next one."""
        self.shared = True
        self.options = leave_workspace(self.options)  # the workspace is no place to look things up
        self._start_options = self.options
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(serve_clients(listener, self, token))
        finally:
            self.shutdown()
            if self.worker is not None:
                self.worker.stop()

    def open_session(self, connection: Connection) -> Callable[[bytes], None]:
        """A fresh protocol (nothing initialized, no requests) writing to `connection` only;
        the handlers registered on the first one are shared."""
        old, new = self.protocol, SpecProtocol(self, self.protocol._converter)
        new.fm.features.update(old.fm.features)
        new.fm.feature_options.update(old.fm.feature_options)
        new.fm.commands.update(old.fm.commands)
        new.set_writer(connection)
        self.protocol = new

        def handle(body: bytes) -> None:
            try:
                self._handle_body(body)
            except SystemExit:  # `exit` ends this session, not the server
                connection.close()

        return handle

    def close_session(self) -> None:
        """Forgets the ended session: its requests are cancelled (their answers go nowhere),
        its documents closed, its options back to the command line's."""
        for future in list(self.protocol._request_futures.values()):
            future.cancel()
        if self.service is not None:
            for uri in self.service.docs.uris():
                self.service.did_close(uri)
        self.service, self.pending_warnings = None, []
        self.options = self._start_options

    def _handle_body(self, body: bytes) -> None:
        try:
            message = json.loads(body, object_hook=self.protocol.structure_message)
            self.protocol.handle_message(message)
        except Exception as exc:  # bad input from a client is logged, never a crash
            log.warning("unreadable message (%d bytes): %s", len(body), type(exc).__name__)

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
        # A remote engine's state; while it fails, its reason in words is the status' error.
        engine = worker.engine_status() if worker is not None else None
        error = worker.error if worker is not None else None
        return {
            "state": state,
            "preset": info.preset if info and info.preset else self.options.preset,
            "device": info.device if info and info.device else self.options.device,
            "error": error or (engine or {}).get("message"),
            "target": info.target if info else "",
            "draft": info.draft if info else None,
            "forward": info.forward if info else None,
            "kernels": info.kernels if info else None,
            # Why the native kernels did not load (torch's run instead); `spec-lsp doctor` too.
            "kernelsError": _kernels_error(),
            "engine": engine,
        }

    async def ready_models(self) -> None:
        """`load_models`, unless an earlier session of a shared server left the same models
        loaded or loading: then this session waits for those."""
        worker = self.worker
        if (
            worker is None
            or worker.state == "failed"
            or self.models_key != self.options.model_key()
        ):
            await self.load_models()
            return
        await self.loaded.wait()
        if worker.state == "ready" and self.service is not None:
            self.service.model_ready()

    async def load_models(self) -> None:
        """Loads the configured preset in the worker, reporting $/progress when supported."""
        assert self.worker is not None and self.service is not None
        self.loaded.clear()
        self.models_key = self.options.model_key()
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

        def finished() -> None:  # even when this task was cancelled (its session ended)
            if not done.done():
                done.set_result(None)  # first: this task's model_ready before any waiter
            self.loaded.set()

        self.worker.load(self.options.preset, self.loader(self.options), progress, finished)
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


def _kernels_error() -> str | None:
    """`engine.native.failure()` once a load has tried the kernels; never imports torch itself.
    While the worker thread still imports the module (torch takes seconds), it is in sys.modules
    half made: nothing to report yet (reading it then raised AttributeError into a status)."""
    native = sys.modules.get("spec_lsp.engine.native")
    if native is None or getattr(getattr(native, "__spec__", None), "_initializing", False):
        return None
    failure = getattr(native, "failure", None)
    return failure() if callable(failure) else None


def client_options(current: Options, settings: Any) -> tuple[Options, list[str]]:
    """`merge`, with three guards for the fields that reload the models: an invalid value keeps
    the current one (merge's fallback to the default would load another model); a preset from
    a client must be a preset name (spec-lsp models list, or tiny), never a path: a client can pick among the
    presets the user installed, not point the server at files; and only a local one, unless the
    user allowed remote or downloading presets (`trust.client_preset_refusal`)."""
    options, warnings = merge(current, settings)
    wire = settings if isinstance(settings, Mapping) else {}
    for name in MODEL_FIELDS:  # an invalid value keeps the models loaded, not the default's
        key, kept = camel(name), getattr(current, name)
        if getattr(options, name) != kept and wire.get(key) != getattr(options, name):
            options = dataclasses.replace(options, **{name: kept})
            warnings = [w for w in warnings if f"for {key!r}" not in w]
            warnings.append(
                f"spec-lsp: invalid value {wire.get(key)!r} for {key!r}; keeping {kept!r}"
            )
    if options.preset != current.preset and not PRESET_NAME.fullmatch(options.preset):
        warnings.append(
            f"spec-lsp: preset {options.preset!r} refused: a client may name a preset "
            f"(spec-lsp models list), not a path; keeping {current.preset!r}"
        )
        options = dataclasses.replace(options, preset=current.preset)
    elif options.preset != current.preset and (refusal := client_preset_refusal(options.preset)):
        warnings.append(f"{refusal}; keeping {current.preset!r}")
        options = dataclasses.replace(options, preset=current.preset)
    return options, warnings


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
    preset: str = Options.preset,
    device: str = "auto",
    loader: LoaderFactory | None = None,
    trust_remote_code: bool = False,
) -> SpecServer:
    """The server with every handler registered. `trust_remote_code` comes from the command line
    only: no client can set it (config.merge ignores it).

    Size: one short closure per LSP method; splitting them would only scatter the registry."""
    server = SpecServer(preset, device, loader)
    server.options = dataclasses.replace(server.options, trust_remote_code=trust_remote_code)

    @server.feature(types.INITIALIZE)
    def initialize(ls: SpecServer, params: types.InitializeParams) -> None:
        ls.options, ls.pending_warnings = client_options(ls.options, params.initialization_options)
        if ls.worker is None:  # a shared server's next session keeps the worker and its models
            ls.worker = InferenceWorker(asyncio.get_running_loop())
        ls.service = CompletionService(ls.worker, ls.options)
        ls.next_edits = NextEdits(ls.service)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: SpecServer, params: types.InitializedParams) -> None:
        for message in ls.pending_warnings:
            ls.warn(message)
        ls.pending_warnings = []
        await ls.ready_models()

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
            log.warning("didChange for a document that is not open: %r", doc.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def text_document_did_close(ls: SpecServer, params: types.DidCloseTextDocumentParams) -> None:
        if ls.service is not None:
            ls.service.did_close(params.text_document.uri)

    every_file = types.FileOperationRegistrationOptions(
        filters=[types.FileOperationFilter(pattern=types.FileOperationPattern(glob="**/*"))]
    )

    @server.feature(types.WORKSPACE_DID_DELETE_FILES, every_file)
    def workspace_did_delete_files(ls: SpecServer, params: types.DeleteFilesParams) -> None:
        if ls.service is not None:  # other files' context: a file that is gone leaves it
            for file in params.files:
                ls.service.neighbours.drop(file.uri)

    @server.feature(types.WORKSPACE_DID_RENAME_FILES, every_file)
    def workspace_did_rename_files(ls: SpecServer, params: types.RenameFilesParams) -> None:
        if ls.service is not None:
            for file in params.files:
                ls.service.neighbours.rename(file.old_uri, file.new_uri)

    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def text_document_inline_completion(
        ls: SpecServer, params: types.InlineCompletionParams
    ) -> types.InlineCompletionList:
        invoked = params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
        found = await _complete(ls, params.text_document.uri, params.position, invoked)
        return types.InlineCompletionList(
            items=[lsp_inline_item(s, params.position) for s in found]
        )

    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions())
    async def text_document_completion(
        ls: SpecServer, params: types.CompletionParams
    ) -> types.CompletionList:
        found = await _complete(ls, params.text_document.uri, params.position)
        items = [lsp_completion_item(s, params.position) for s in found]
        return types.CompletionList(is_incomplete=True, items=items)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def workspace_did_change_configuration(
        ls: SpecServer, params: types.DidChangeConfigurationParams
    ) -> None:
        section = settings_section(params.settings)
        if section is None:
            return
        options, warnings = client_options(ls.options, section)
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
            ls.service.feedback.did_accept(sid)

    @server.feature(DID_SHOW)
    def spec_lsp_did_show_completion(ls: SpecServer, params: Any) -> None:
        sid = _suggestion_id(params)
        if ls.service is not None and sid is not None:
            ls.service.feedback.did_show(sid)

    @server.feature(DID_ACCEPT)
    def spec_lsp_did_accept_completion(ls: SpecServer, params: Any) -> None:
        sid = _suggestion_id(params)
        if ls.service is not None and sid is not None:
            ls.service.feedback.did_accept(sid)

    @server.feature(DID_PARTIALLY_ACCEPT)
    def spec_lsp_did_partially_accept_completion(ls: SpecServer, params: Any) -> None:
        sid, length = _suggestion_id(params), _param(params, "acceptedLength")
        if ls.service is not None and sid is not None and isinstance(length, int):
            ls.service.feedback.did_partially_accept(sid, length)

    @server.feature(DID_MOVE_CURSOR)
    def spec_lsp_did_move_cursor(ls: SpecServer, params: Any) -> None:
        doc, position = _param(params, "textDocument"), _param(params, "position")
        uri, version = _param(doc, "uri"), _param(doc, "version")
        line, char = _param(position, "line"), _param(position, "character")
        if ls.service is None or not isinstance(uri, str):
            return
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in (line, char)):
            return
        if ls.options.excluded(uris.to_fs_path(uri) or uri):
            return
        version = version if isinstance(version, int) and not isinstance(version, bool) else None
        ls.service.did_move_cursor(uri, version, line, char, ls.encoding)

    @server.feature(edit_wire.METHOD)
    async def text_document_copilot_inline_edit(ls: SpecServer, params: Any) -> dict[str, Any]:
        request = edit_wire.parse_request(params)
        if request is None:
            raise JsonRpcInvalidParams(
                f"{edit_wire.METHOD} needs textDocument.uri, textDocument.version and position"
            )
        return {"edits": await _next_edits(ls, request)}

    @server.feature(edit_wire.DID_SHOW)
    def text_document_did_show_inline_edit(ls: SpecServer, params: Any) -> None:
        if ls.next_edits is not None and (sid := edit_wire.edit_id(params)) is not None:
            ls.next_edits.did_show(sid)

    @server.feature(edit_wire.DID_FOCUS)
    def text_document_did_focus(ls: SpecServer, params: Any) -> None:
        """Copilot's clients say which document has the focus; nothing to do with it (accepted
        so that it is not logged as an unknown method at every buffer switch)."""

    @server.feature(edit_wire.DID_REJECT)
    def spec_lsp_did_reject_inline_edit(ls: SpecServer, params: Any) -> None:
        if ls.next_edits is not None and (sid := edit_wire.edit_id(params)) is not None:
            ls.next_edits.did_reject(sid)

    @server.command(edit_wire.ACCEPT_COMMAND)
    def did_accept_inline_edit(ls: SpecServer, *args: Any) -> None:
        sid = edit_wire.edit_id(args[0]) if args else None
        if ls.next_edits is not None and sid is not None:
            ls.next_edits.did_accept(sid)

    @server.feature(STATS)
    def spec_lsp_stats(ls: SpecServer, params: Any) -> dict[str, Any]:
        if ls.service is None:
            raise JsonRpcInvalidParams("spec-lsp/stats before initialize")
        status = ls.status()
        model = {k: status[k] for k in ("preset", "device", "state", "forward", "kernels")}
        out = ls.service.stats_wire(model)
        if ls.next_edits is not None:
            out["nextEdit"] = ls.next_edits.stats.to_wire()
        return out

    @server.feature(STATUS)
    def spec_lsp_status(ls: SpecServer, params: Any) -> dict[str, Any]:
        return ls.status()

    @server.feature(DOCUMENT_TEXT)
    def spec_lsp_document_text(ls: SpecServer, params: Any) -> dict[str, Any] | None:
        uri = _param(params, "uri")
        doc = ls.service.docs.get(uri) if ls.service is not None and isinstance(uri, str) else None
        return None if doc is None else {"version": doc.version, "text": doc.text}

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: SpecServer, params: Any) -> None:
        if ls.worker is not None and not ls.shared:  # a shared server's models outlive a session
            ls.worker.stop()

    @server.feature(types.EXIT)
    def exit_(ls: SpecServer, params: Any) -> None:
        if ls.shared:  # pygls closes the connection; the transport ends that session only
            return
        code = 0 if ls.protocol._shutdown else 1
        timer = threading.Timer(EXIT_GRACE_S, os._exit, args=(code,))
        timer.daemon = True
        timer.start()

    return server


async def _next_edits(ls: SpecServer, request: edit_wire.EditRequest) -> list[dict[str, Any]]:
    """The next edit at the request's position, as Copilot's clients read it ([] for none)."""
    uri = request.uri
    service, next_edits = ls.service, ls.next_edits
    if service is None or next_edits is None or ls.options.excluded(uris.to_fs_path(uri) or uri):
        return []
    doc = service.docs.get(uri)
    pos = None if doc is None else doc.position(request.line, request.character, ls.encoding)
    if doc is None or pos is None:
        return []
    found = await next_edits.suggest(uri, request.version, *pos)
    if found is None or service.docs.get(uri) is not doc or doc.version != found.version:
        return []
    return [edit_wire.to_wire(found, doc, ls.encoding)]


async def _complete(
    ls: SpecServer, uri: str, position: types.Position, invoked: bool = False
) -> list[Suggestion]:
    """`invoked`: the user asked explicitly, so a model still loading is waited for (bounded),
    and up to `ALTERNATIVES` distinct suggestions come back (the editor cycles them); automatic
    requests get one, and are answered empty at once while the model loads."""
    if ls.service is None or ls.options.excluded(uris.to_fs_path(uri) or uri):
        return []  # an `exclude` pattern matches the file: no suggestion, no model call
    arrival = ARRIVAL.get()
    if invoked and ls.worker is not None and ls.worker.state == "loading":
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ls.loaded.wait(), INVOKED_LOAD_WAIT_S)
    n = ALTERNATIVES if invoked else 1
    line, char = position.line, position.character
    return await ls.service.complete_all(uri, line, char, ls.encoding, arrival, n)
