"""The server object: stdio or a shared server's clients, the session, status and loading.

`SpecServer` serves one client over stdio (`start_io`) or the clients of a socket one after
another (`start_shared`: a fresh protocol per client, the models kept). It holds the options in
force, the inference worker, and the client's `ClientSession` (session.py) from `initialize` on;
it loads the models with `$/progress` and says what it is doing (`status`). The handlers that work
on it are handlers.py's; what it needs of pygls's non-public names is pygls_internals.py's.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import json
import logging
import socket
import sys
import time
from collections.abc import Callable
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.exceptions import JsonRpcServerNotInitialized
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from spec_lsp.completion import Arrival
from spec_lsp.config import Options
from spec_lsp.server.pygls_internals import SpecProtocol, cancel_requests, session_protocol
from spec_lsp.server.session import ClientSession
from spec_lsp.transport import Connection, serve_clients
from spec_lsp.trust import leave_workspace
from spec_lsp.version import __version__
from spec_lsp.wire import serve_stream
from spec_lsp.worker import InferenceWorker, Loader, engine_loader

log = logging.getLogger(__name__)

VERSION = __version__  # serverInfo's

LoaderFactory = Callable[[Options], Loader]
COMPLETION_METHODS = (types.TEXT_DOCUMENT_INLINE_COMPLETION, types.TEXT_DOCUMENT_COMPLETION)
# A completion request's arrival (its document's version as the request was read).
ARRIVAL: contextvars.ContextVar[Arrival | None] = contextvars.ContextVar("arrival", default=None)


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
        self.worker: InferenceWorker | None = None
        self.exit_code = 0
        self.loaded = asyncio.Event()  # set while no load is in progress (after the first)
        self.models_key: tuple[object, ...] | None = None  # what the last load was asked for
        self.shared = False  # serving one client after another (`start_shared`)
        self._session: ClientSession | None = None  # from `initialize` on
        self._start_options = self.options
        self._progress_ids = itertools.count(1)

    @property
    def session(self) -> ClientSession:
        """The client's session; a handler runs only after `initialize` made it."""
        if self._session is None:
            raise JsonRpcServerNotInitialized("no session before initialize")
        return self._session

    def set_session(self, session: ClientSession) -> None:
        """At `initialize`: `session` is the client's from now on."""
        self._session = session

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
        self.protocol = session_protocol(self.protocol)
        self.protocol.set_writer(connection)

        def handle(body: bytes) -> None:
            try:
                self._handle_body(body)
            except SystemExit:  # `exit` ends this session, not the server
                connection.close()

        return handle

    def close_session(self) -> None:
        """Forgets the ended session: its requests are cancelled (their answers go nowhere),
        its documents closed, its options back to the command line's."""
        cancel_requests(self.protocol)
        if self._session is not None:
            self._session.close()
        self._session = None
        self.options = self._start_options

    def before_request(self, method: str, params: Any) -> None:
        """As a request is read (pygls_internals.py calls it), before edits read after it are
        applied: a completion request's arrival is noted for its handler's task."""
        if method in COMPLETION_METHODS and self._session is not None:
            uri = getattr(getattr(params, "text_document", None), "uri", None)
            if isinstance(uri, str):
                ARRIVAL.set(self._session.service.arrive(uri))

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
        state: str = "loading" if worker is None else worker.state
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
            "kernelsError": kernels_error(),
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
        if worker.state == "ready" and self._session is not None:
            self._session.service.model_ready()

    async def load_models(self) -> None:
        """Loads the configured preset in the worker, reporting $/progress when supported."""
        assert self.worker is not None and self._session is not None
        self.loaded.clear()
        self.models_key = self.options.model_key()
        token = await self._begin_progress(f"loading {self.options.preset}")
        done = asyncio.get_running_loop().create_future()

        started = time.monotonic()

        def progress(message: str, fraction: float) -> None:
            # The load's fractions never go back (`engine.progress.Steps`); the seconds since it
            # began follow each message, so a client shows where a long step stands.
            if token is not None:
                pct = max(0, min(100, int(fraction * 100)))
                text = f"{message} ({time.monotonic() - started:.0f} s)"
                self.work_done_progress.report(
                    token, types.WorkDoneProgressReport(message=text, percentage=pct)
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
            if self._session is not None:  # None: its session ended while it loaded
                self._session.service.model_ready()
            log.info("models ready: %s", worker.info)
        else:
            self.warn(
                f"spec-lsp: could not load preset {self.options.preset!r}: {worker.error}",
                types.MessageType.Error,
            )

    async def _begin_progress(self, message: str) -> str | None:
        """A `$/progress` token, begun with `message`, when the client supports it and agrees."""
        caps = self.client_capabilities
        if not (caps.window and caps.window.work_done_progress):
            return None
        token = f"spec-lsp/load/{next(self._progress_ids)}"
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(token), 10)
            self.work_done_progress.begin(
                token, types.WorkDoneProgressBegin(title="spec-lsp", message=message, percentage=0)
            )
        except Exception:
            log.warning("client refused work done progress", exc_info=True)
            return None
        return token


def kernels_error() -> str | None:
    """`engine.native.failure()` once a load has tried the kernels; never imports torch itself.
    While the worker thread still imports the module (torch takes seconds), it is in sys.modules
    half made: nothing to report yet (reading it then raised AttributeError into a status)."""
    native = sys.modules.get("spec_lsp.engine.weights.native")
    if native is None or getattr(getattr(native, "__spec__", None), "_initializing", False):
        return None
    failure = getattr(native, "failure", None)
    return failure() if callable(failure) else None
