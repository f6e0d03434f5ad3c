"""A minimal LSP client over a server subprocess's stdio: the package's one JSON-RPC client.

The replayer and `bench server` speak to a real server through it, as an editor would.

It sends frames when told (no queueing of its own, so timing stays the replayer's), stamps every
response with its arrival time on the event loop's clock, and answers the server's own requests
(progress tokens, configuration) the way a plain editor would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Mapping
from typing import IO, Any

from spec_lsp.interpreter import child_env
from spec_lsp.replay.framing import FramingError, encode, read_frame_async

ResponseCallback = Callable[[dict[str, Any], float], None]
REQUEST_CANCELLED = -32800
SERVER_CANCELLED = -32802


class ServerError(RuntimeError):
    """The server died, could not start, or answered a request of the replayer with an error."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class LspClient:
    def __init__(
        self,
        cmd: list[str],
        stderr: IO[bytes] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """`env`: variables set for the server over this process's environment."""
        self.cmd = cmd
        self._stderr = stderr
        self._env = dict(env or {})
        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._callbacks: dict[int, ResponseCallback] = {}
        self._next_id = 0
        self.messages: list[str] = []  # window/showMessage texts, for the report
        self.closed = asyncio.Event()

    async def start(self) -> None:
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.cmd,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=self._stderr if self._stderr is not None else asyncio.subprocess.DEVNULL,
                env={**child_env(), **self._env, "PYTHONUNBUFFERED": "1"},
            )
        except OSError as exc:
            raise ServerError(f"cannot start server {self.cmd[0]!r}: {exc}") from None
        self._reader = asyncio.create_task(self._read_loop())

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def send(self, msg: dict[str, Any], on_response: ResponseCallback | None = None) -> None:
        if self._proc is None or self._proc.stdin is None or self.closed.is_set():
            raise ServerError("the server is not running")
        if on_response is not None:
            self._callbacks[msg["id"]] = on_response
        self._proc.stdin.write(encode(msg))

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise ServerError("the server is not running")
        return self._proc.pid

    def send_request(self, method: str, params: Any = None) -> asyncio.Future[dict[str, Any]]:
        """Sends a request now; the future gets its whole response message when it arrives."""
        done: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

        def on_response(msg: dict[str, Any], _t: float) -> None:
            if not done.done():
                done.set_result(msg)

        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id(), "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg, on_response)
        return done

    async def result(
        self, done: asyncio.Future[dict[str, Any]], method: str, timeout: float = 30.0
    ) -> Any:
        """Waits for a sent request's response: its result, or ServerError (error, exit,
        timeout)."""
        closed: asyncio.Future[Any] = asyncio.ensure_future(self.closed.wait())
        try:
            waiting: set[asyncio.Future[Any]] = {done, closed}
            await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closed.cancel()
        if not done.done():
            raise ServerError(
                f"{method}: " + ("server exited" if self.closed.is_set() else "timed out")
            )
        response = done.result()
        if "error" in response:
            error = response["error"] or {}
            raise ServerError(f"{method}: {error.get('message')}", error.get("code"))
        return response.get("result")

    async def request(self, method: str, params: Any = None, timeout: float = 30.0) -> Any:
        return await self.result(self.send_request(method, params), method, timeout)

    async def _read_loop(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        loop = asyncio.get_running_loop()
        try:
            while (body := await read_frame_async(self._proc.stdout)) is not None:
                arrived = loop.time()
                try:
                    msg = json.loads(body)
                except json.JSONDecodeError:
                    continue
                if isinstance(msg, dict):
                    self._dispatch(msg, arrived)
        except (FramingError, ConnectionError):
            pass
        finally:
            self.closed.set()

    def _dispatch(self, msg: dict[str, Any], arrived: float) -> None:
        method = msg.get("method")
        if method is None:
            callback = self._callbacks.pop(msg.get("id"), None)  # type: ignore[arg-type]
            if callback is not None:
                callback(msg, arrived)
        elif "id" in msg:
            self._answer_server_request(msg)
        elif method == "window/showMessage":
            self.messages.append(str(msg.get("params", {}).get("message", "")))

    def _answer_server_request(self, msg: dict[str, Any]) -> None:
        result: Any = None
        if msg["method"] == "workspace/configuration":
            result = [None for _ in msg.get("params", {}).get("items", [])]
        with contextlib.suppress(ServerError, ConnectionError):
            self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})

    async def drain(self) -> None:
        if self._proc is not None and self._proc.stdin is not None and not self.closed.is_set():
            with contextlib.suppress(ConnectionError):
                await self._proc.stdin.drain()

    async def stop(self, timeout: float = 10.0) -> int | None:
        """shutdown + exit, then waits for the process (killing it if it does not go)."""
        proc = self._proc
        if proc is None:
            return None
        if not self.closed.is_set():
            with contextlib.suppress(ServerError, ConnectionError):
                await self.request("shutdown", timeout=timeout)
                self.notify("exit", None)
                await self.drain()
        try:
            code = await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            proc.kill()
            code = await proc.wait()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        return code
