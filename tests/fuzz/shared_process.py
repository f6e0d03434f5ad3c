"""A shared `spec-lsp serve --tcp/--socket` subprocess, and synchronous clients of it.

`SharedServer` starts the server on 127.0.0.1:0 (or a Unix socket) with a known token and reads
the bound address from its stderr; `SocketClient` speaks LSP over one connection with the same
calls as `ServerProcess` (`LspCalls`), so the protocol fuzz and plain tests drive either; `refused`
sends raw bytes on a connection of its own and returns what came back before the server closed it.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time
from typing import Any

import psutil

from spec_lsp.wire import read_frames
from tests.fuzz.lsp_process import TIMEOUT_S, LspCalls, Response, serve_command

TOKEN = "test-token-0123456789"
Address = tuple[str, int] | str
_LISTENING = re.compile(r"spec-lsp: listening on (\S+)")


def frame(msg: Any) -> bytes:
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def initialize_message(token: str | None, msg_id: Any = 1) -> dict[str, Any]:
    options: dict[str, Any] = {} if token is None else {"token": token}
    params = {"processId": None, "capabilities": {}, "initializationOptions": options}
    return {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params}


def _connect(address: Address) -> socket.socket:
    if isinstance(address, str):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(TIMEOUT_S)
        sock.connect(address)
        return sock
    sock = socket.create_connection(address, timeout=TIMEOUT_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as editors' clients do
    return sock


class SocketClient(LspCalls):
    """One connection: frames out (in order, from any thread), a thread reading frames in;
    responses resolve the futures of their ids, the server's requests get plain answers."""

    def __init__(self, address: Address, token: str | None, process: psutil.Process) -> None:
        self.token, self.process = token, process
        self.sock = _connect(address)
        self.sock.settimeout(None)
        self._reader = self.sock.makefile("rb")
        self._lock = threading.Lock()
        self._pending: dict[Any, concurrent.futures.Future[Response]] = {}
        self.messages: list[str] = []  # window/showMessage texts
        self.strays: list[Response] = []  # responses to no request of this connection
        self.closed = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def initialize(
        self, options: dict[str, Any] | None = None, encodings: list[str] | None = None
    ) -> Response:
        with_token = {**(options or {}), **({"token": self.token} if self.token else {})}
        return super().initialize(with_token, encodings)

    def send(self, msg: dict[str, Any]) -> concurrent.futures.Future[Response] | None:
        done: concurrent.futures.Future[Response] | None = None
        if "id" in msg and "method" in msg:
            done = concurrent.futures.Future()
            self._pending[msg["id"]] = done
        try:
            self._write(frame(msg))
        except OSError as exc:
            if done is not None and not done.done():
                done.set_exception(exc)
        return done

    def raw(self, data: bytes) -> None:
        with contextlib.suppress(OSError):
            self._write(data)

    def _write(self, data: bytes) -> None:
        with self._lock:
            self.sock.sendall(data)

    def _read(self) -> None:
        try:
            read_frames(self._reader, self._dispatch)
        except (OSError, ValueError):
            pass
        finally:
            self.closed.set()
            for done in list(self._pending.values()):
                if not done.done():
                    done.set_exception(ConnectionError("the server closed the connection"))

    def _dispatch(self, body: bytes) -> None:
        msg = json.loads(body)
        method = msg.get("method")
        if method is None:
            done = self._pending.pop(msg.get("id"), None)
            if done is None:
                self.strays.append(msg)
            elif not done.done():
                done.set_result(msg)
        elif "id" in msg:  # the server's request (configuration, progress): a plain answer
            items = (msg.get("params") or {}).get("items", [])
            result = [None] * len(items) if method == "workspace/configuration" else None
            self.raw(frame({"jsonrpc": "2.0", "id": msg["id"], "result": result}))
        elif method == "window/showMessage":
            self.messages.append(str(msg["params"].get("message", "")))

    def alive(self) -> bool:
        """The connection is open and the server process runs."""
        return not self.closed.is_set() and self.process.is_running()

    def end_session(self, timeout: float = TIMEOUT_S) -> bool:
        """shutdown + exit; True once the server has closed this connection."""
        self.result("shutdown")
        self.notify("exit")
        return self.closed.wait(timeout)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.closed.wait(TIMEOUT_S)
        self._reader.close()
        self.sock.close()


class SharedServer:
    """`spec-lsp serve --tcp 127.0.0.1:0 --preset PRESET` (or `--socket PATH`), token `token`
    through $SPEC_LSP_TOKEN (None: none given). Generated token files go to a temporary
    $XDG_RUNTIME_DIR (`runtime_dir`)."""

    def __init__(
        self,
        preset: str = "tiny",
        socket_path: str | None = None,
        token: str | None = TOKEN,
        extra: tuple[str, ...] = (),
    ) -> None:
        self.token = token
        self._runtime = tempfile.TemporaryDirectory()
        self.runtime_dir = self._runtime.name
        where = ("--socket", socket_path) if socket_path else ("--tcp", "127.0.0.1:0")
        env = {**os.environ, "XDG_RUNTIME_DIR": self.runtime_dir, "PYTHONUNBUFFERED": "1"}
        env.pop("SPEC_LSP_TOKEN", None)
        if token is not None:
            env["SPEC_LSP_TOKEN"] = token
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - read after close()
        self.popen = subprocess.Popen(
            [*serve_command(preset), *where, *extra],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
            env=env,
        )
        self.process = psutil.Process(self.popen.pid)
        self.address = self._listening()

    def _listening(self, timeout: float = TIMEOUT_S) -> Address:
        deadline = time.monotonic() + timeout
        while (found := _LISTENING.search(self.stderr_text())) is None:
            if self.popen.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"the server did not start:\n{self.stderr_text()}")
            time.sleep(0.05)
        where = found.group(1)
        if where.startswith("/"):
            return where
        host, _, port = where.rpartition(":")
        return host, int(port)

    def connect(self, token: str | None = None) -> SocketClient:
        """A client presenting `token` (default: the server's)."""
        return SocketClient(self.address, token or self.token, self.process)

    def refused(self, data: bytes, timeout: float = TIMEOUT_S) -> bytes:
        """Sends `data` on a new connection; what came back before the server closed it (a
        connection still open after `timeout` raises TimeoutError)."""
        with _connect(self.address) as sock:
            with contextlib.suppress(OSError):  # the server may close before all is sent
                sock.sendall(data)
            sock.settimeout(timeout)
            got = b""
            try:
                while chunk := sock.recv(65536):
                    got += chunk
            except ConnectionResetError:
                pass
            except TimeoutError:
                raise TimeoutError(f"still open after {timeout} s; received {got!r}") from None
            return got

    def stderr_text(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")

    def alive(self) -> bool:
        return self.popen.poll() is None

    def close(self) -> int | None:
        """SIGTERM, then the exit code (killed if it does not end)."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            code: int | None = self.popen.wait(30)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            code = self.popen.wait(30)
        self._runtime.cleanup()
        return code
