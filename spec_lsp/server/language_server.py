"""The server object: stdio or a shared server's clients, the session, status and loading.

`SpecServer` is one client's server: over stdio (`start_io`), or one of the clients a shared
server serves at once (`start_shared`: the `SpecServer` that listens makes one per connection,
`open_session`, with the handlers registered on it). It holds the client's protocol, its options
in force and its `ClientSession` (session.py) from `initialize` on; what the clients share (the
inference worker, so one model pair, and who is connected) is its `ModelHost` (host.py). It loads
the models with `$/progress` and says what it is doing (`status`). The handlers that work on it
are handlers.py's; what it needs of pygls's non-public names is pygls_internals.py's.
"""

from __future__ import annotations

import asyncio
import contextvars
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
from spec_lsp.engine import kvstarts
from spec_lsp.server.host import MAX_CLIENTS, LoaderFactory, ModelHost
from spec_lsp.server.pygls_internals import SpecProtocol, cancel_requests
from spec_lsp.server.session import ClientSession
from spec_lsp.transport import Connection, serve_clients
from spec_lsp.trust import leave_workspace
from spec_lsp.version import __version__
from spec_lsp.wire import serve_stream
from spec_lsp.worker import InferenceWorker, engine_loader
from spec_lsp.worker_lane import WorkerLane, WorkerPort

log = logging.getLogger(__name__)

VERSION = __version__  # serverInfo's

COMPLETION_METHODS = (types.TEXT_DOCUMENT_INLINE_COMPLETION, types.TEXT_DOCUMENT_COMPLETION)
WORKER_STOP_WAIT_S = 5.0  # at the end, for the generation running to stop (within a pass)
KV_WRITE_WAIT_S = 5.0  # at the end, for the documents' KV to be written to disk
# A completion request's arrival (its document's version as the request was read).
ARRIVAL: contextvars.ContextVar[Arrival | None] = contextvars.ContextVar("arrival", default=None)


class SpecServer(LanguageServer):
    def __init__(
        self,
        preset: str = Options.preset,
        device: str = "auto",
        loader: LoaderFactory | None = None,
        host: ModelHost | None = None,
    ) -> None:
        super().__init__(
            "spec-lsp",
            VERSION,
            protocol_cls=SpecProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.options = Options(preset=preset, device=device)
        self.host = host or ModelHost(loader or engine_loader)
        self.exit_code = 0
        self.shared = False  # one of a shared server's clients (`start_shared`)
        self._starts_kept = False  # `keep_window_starts` ran
        self._session: ClientSession | None = None  # from `initialize` on
        self._start_options = self.options
        self._connection: Connection | None = None  # a shared server's client's
        # Registers the handlers on a client's server (`build_server`'s table).
        self.register: Callable[[SpecServer], None] = lambda server: None

    @property
    def worker(self) -> InferenceWorker | None:
        """The shared worker, from the first `initialize` on."""
        return self.host.worker

    def keep_window_starts(self) -> None:
        """The session ends: its documents' prompt window starts go beside the KV kept on disk
        (`engine/kvstarts.py`), for the next server to start its windows where this one did
        (once a session; nothing before `initialize` or with KV on disk off)."""
        session = self._session
        if session is not None and not self._starts_kept:
            self._starts_kept = True
            kvstarts.save(session.service.planner.window_starts())

    def end_models(self) -> None:
        """The server ends (`shutdown`, or the connection or the process ends without one): the
        worker stops, and every document's KV is kept on disk (`Backend.persist`), so that a
        restarted server's first request in a file reopened starts warm (once; it blocks the
        loop for at most the two waits: no request is served any more)."""
        worker = self.worker
        if worker is not None:
            worker.finish(lambda backend: backend.persist(KV_WRITE_WAIT_S), WORKER_STOP_WAIT_S)

    @property
    def loaded(self) -> asyncio.Event:
        return self.host.loaded

    @property
    def session(self) -> ClientSession:
        """The client's session; a handler runs only after `initialize` made it."""
        if self._session is None:
            raise JsonRpcServerNotInitialized("no session before initialize")
        return self._session

    def set_session(self, session: ClientSession) -> None:
        """At `initialize`: `session` is the client's from now on."""
        self._session = session

    def worker_port(self) -> tuple[WorkerPort, str | None, WorkerLane | None]:
        """At `initialize`: the worker as this client's session sees it, its name and its lane.
        A stdio client has the worker to itself; a shared server's client has a lane of its own
        (`worker_lane.py`), so its jobs and documents stay its own."""
        worker = self.host.start_worker(asyncio.get_running_loop())
        if not self.shared:
            return worker, None, None
        name = self.host.join()
        lane = WorkerLane(worker, name)
        return lane, name, lane

    def others_use_models(self) -> int:
        """How many other clients use the models loaded (a shared server's): a model setting
        of this client's that differs is not loaded while there are any."""
        worker = self.worker
        if not self.shared or self.host.models is None or worker is None:
            return 0
        if worker.state == "failed":  # no models in use: any client may load its own
            return 0
        return self.host.others(self._session.name if self._session else None)

    def keep_shared_models(self, options: Options) -> Options:
        """`options`, with the models in use kept where other clients use them (said once)."""
        others = self.others_use_models()
        if not others or options.model_key() == self.host.models_key:
            return options
        kept = self.host.with_models(options)
        self.warn(
            f"spec-lsp: this server's models ({kept.preset!r}) serve {others} other editor "
            f"window(s); {options.preset!r} is not loaded while they are connected"
        )
        return kept

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
            self.keep_window_starts()
            self.end_models()
            self.shutdown()

    def start_shared(
        self, listener: socket.socket, token: str | None, idle_exit_s: float = 0.0
    ) -> None:
        """Serves the clients of `listener` at once (`transport.serve_clients`: bounded framing,
        admission by `token`, at most MAX_CLIENTS) until SIGTERM or SIGINT, or until no client
        has been served for `idle_exit_s` seconds (0: never). Each connection is a
        session of its own, from `initialize` on; the models are loaded once for all of them,
        and stay loaded for the next client when the last one leaves."""
        self.options = leave_workspace(self.options)  # the workspace is no place to look things up
        self._start_options = self.options
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            served = serve_clients(listener, self, token, MAX_CLIENTS, idle_exit_s)
            loop.run_until_complete(served)
        finally:
            self.end_models()  # stops the worker too
            self.shutdown()

    def open_session(self, connection: Connection) -> SpecServer:
        """A new client's server: a fresh protocol (nothing initialized, no requests) writing
        to `connection` only, the handlers registered, the models (this server's host) shared,
        the options the command line's."""
        client = SpecServer(self.options.preset, self.options.device, host=self.host)
        client.options = client._start_options = self._start_options
        client.shared = True
        client.register = self.register
        self.register(client)
        client.protocol.set_writer(connection)
        client._connection = connection
        return client

    def handle(self, body: bytes) -> None:
        """A message of this client's connection (a shared server's)."""
        try:
            self._handle_body(body)
        except SystemExit:  # `exit` ends this session, not the server
            if self._connection is not None:
                self._connection.close()

    def close(self) -> None:
        """The connection ended: its requests are cancelled (their answers go nowhere), its
        documents closed, its lane of the worker left."""
        cancel_requests(self.protocol)
        session, self._session = self._session, None
        if session is not None:
            session.close()
            if session.name is not None:
                self.host.leave(session.name)

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
        """The shared model's state, and this client's own part (`session`)."""
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
            "clients": max(len(self.host.clients), 1),
            "session": None if self._session is None else self._session.summary(),
        }

    async def ready_models(self) -> None:
        """`load_models`, unless another client of a shared server (connected, or gone) left the
        same models loaded or loading, or others use the models: then this one waits for those."""
        worker = self.worker
        if (kept := self.keep_shared_models(self.options)) != self.options:
            self.options = kept
            if self._session is not None:
                self._session.service.set_options(kept)
        if (
            worker is None
            or worker.state == "failed"
            or self.host.models_key != self.options.model_key()
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
        self.host.models = self.options
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

        lane = None if self._session is None else self._session.name
        loader = self.host.loader(self.options)
        self.worker.load(self.options.preset, loader, progress, finished, lane)
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
        token = f"spec-lsp/load/{next(self.host.progress_ids)}"
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
