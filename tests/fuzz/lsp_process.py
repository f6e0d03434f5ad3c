"""A real `spec-lsp serve` subprocess driven from synchronous test code.

The package's one JSON-RPC client (`replay/client.py`) runs on an event loop in a thread of its
own; this wrapper hands it messages in order and waits on responses with timeouts, so hypothesis
state machines and plain tests can speak LSP and also write raw bytes, close stdin or signal.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import psutil

from spec_lsp.replay.client import LspClient

Response = dict[str, Any]
TIMEOUT_S = 60.0


def serve_command(preset: str = "tiny", *extra: str) -> list[str]:
    return [sys.executable, "-m", "spec_lsp.cli", "serve", "--preset", preset, *extra]


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class LspCalls:
    """Requests, notifications and the session start, over any `send` (stdio or a socket)."""

    def send(self, msg: dict[str, Any]) -> concurrent.futures.Future[Response] | None:
        raise NotImplementedError

    def request_async(
        self, method: str, params: Any = None, msg_id: Any = None
    ) -> concurrent.futures.Future[Response]:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        msg["id"] = msg_id if msg_id is not None else f"t{next_id()}"
        if params is not None:
            msg["params"] = params
        done = self.send(msg)
        assert done is not None
        done.msg_id = msg["id"]  # type: ignore[attr-defined]
        return done

    def request(self, method: str, params: Any = None, timeout: float = TIMEOUT_S) -> Response:
        return self.request_async(method, params).result(timeout)

    def result(self, method: str, params: Any = None, timeout: float = TIMEOUT_S) -> Any:
        response = self.request(method, params, timeout)
        assert "error" not in response, response
        return response.get("result")

    def notify(self, method: str, params: Any = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def initialize(
        self, options: dict[str, Any] | None = None, encodings: list[str] | None = None
    ) -> Response:
        caps: dict[str, Any] = {"window": {"workDoneProgress": False}}
        if encodings:
            caps["general"] = {"positionEncodings": encodings}
        params = {"processId": os.getpid(), "capabilities": caps}
        if options is not None:
            params["initializationOptions"] = options
        result = self.result("initialize", params)
        self.notify("initialized", {})
        return result  # type: ignore[no-any-return]

    def wait_loaded(self, timeout: float = 120.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            status = self.result("spec-lsp/status")
            if status["state"] != "loading":
                return status  # type: ignore[no-any-return]
            if time.monotonic() > deadline:
                raise TimeoutError("model still loading")
            threading.Event().wait(0.1)


class ServerProcess(LspCalls):
    def __init__(self, cmd: list[str], env: dict[str, str] | None = None) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self.client = LspClient(cmd, stderr=self.stderr)  # type: ignore[arg-type]
        with _environment(env or {}):
            self._run(self.client.start())
        self.pid = self.client.pid
        self.process = psutil.Process(self.pid)

    def _run(self, coro: Any, timeout: float = TIMEOUT_S) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    # -- sending, in order -----------------------------------------------------------------
    def send(self, msg: dict[str, Any]) -> concurrent.futures.Future[Response] | None:
        """Writes one message; for a request (an `id`), the future of its whole response."""
        done: concurrent.futures.Future[Response] | None = None
        if "id" in msg and "method" in msg:
            done = concurrent.futures.Future()

        def on_response(response: Response, _t: float) -> None:
            if done is not None and not done.done():
                done.set_result(response)

        def write() -> None:
            try:
                self.client.send(msg, on_response if done is not None else None)
            except Exception as exc:  # the server is gone: the future says so
                if done is not None and not done.done():
                    done.set_exception(exc)

        self.loop.call_soon_threadsafe(write)
        return done

    def raw(self, data: bytes) -> None:
        def write() -> None:
            proc = self.client._proc
            if proc is not None and proc.stdin is not None and not proc.stdin.is_closing():
                proc.stdin.write(data)

        self.loop.call_soon_threadsafe(write)

    def close_stdin(self) -> None:
        def close() -> None:
            proc = self.client._proc
            if proc is not None and proc.stdin is not None:
                proc.stdin.close()

        self.loop.call_soon_threadsafe(close)

    @property
    def messages(self) -> list[str]:
        return list(self.client.messages)

    def stderr_text(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")

    # -- ending ----------------------------------------------------------------------------
    def wait(self, timeout: float) -> int | None:
        """The exit code once the process has ended, or None if it still runs after timeout."""
        proc = self.client._proc
        assert proc is not None
        try:
            return int(self._run(asyncio.wait_for(proc.wait(), timeout), timeout + 5))
        except TimeoutError:
            return None

    def alive(self) -> bool:
        proc = self.client._proc
        return proc is not None and proc.returncode is None and self.process.is_running()

    def close(self) -> int | None:
        """shutdown + exit (or kill); ends the client's loop."""
        try:
            code: int | None = self._run(self.client.stop(timeout=20.0), 60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5)
            self.stderr.close()
        return code


_ids = iter(range(1, 1 << 62))


def next_id() -> int:
    return next(_ids)
