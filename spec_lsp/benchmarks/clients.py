"""`spec-lsp bench clients`: one shared server's memory with one editor client, then with N.

It starts `spec-lsp serve --socket` (a temporary socket) and connects N clients to it, one after
another, as editor windows would: each initializes, waits for the models (the first client's load;
the later ones find them loaded), opens `docs` documents of its own (Python files of the standard
library) and asks for a completion at the end of each. The server's resident set (VmRSS, after a
second of idle time, so the idle worker has handed freed memory back) is read with the models
loaded and after each client; the figure to compare is N clients' against one's, where N editor
windows each starting a server would hold N times one's. Prints a table and writes JSON with
`json_path`.

It speaks LSP over the socket with a small framing of its own; it knows nothing of the server's
insides.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from spec_lsp.benchmarks.server import end_position, rss_mb, sources
from spec_lsp.interpreter import child_command
from spec_lsp.replay.client import ServerError

TIMEOUT_S = 600.0  # the model load, or one answer on a slow CPU
IDLE_S = 1.0  # before each RSS reading: the idle worker hands freed memory back


class SocketClient:
    """One editor window: LSP over a Unix socket, requests answered by id."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.reading = asyncio.ensure_future(self._read())

    @classmethod
    async def connect(cls, path: str) -> SocketClient:
        reader, writer = await asyncio.open_unix_connection(path, limit=2**26)
        return cls(reader, writer)

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    async def request(self, method: str, params: Any = None) -> Any:
        msg_id = next(self.ids)
        answer = asyncio.get_running_loop().create_future()
        self.pending[msg_id] = answer
        self.send({"id": msg_id, "method": method, "params": params})
        message = await asyncio.wait_for(answer, TIMEOUT_S)
        if "error" in message:
            raise ServerError(f"{method}: {message['error']}")
        return message.get("result")

    async def _read(self) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                header = await self.reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in header.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                message = json.loads(await self.reader.readexactly(length))
                answer = (
                    self.pending.pop(message.get("id"), None) if "method" not in message else None
                )
                if answer is not None and not answer.done():
                    answer.set_result(message)
                elif "method" in message and "id" in message:  # the server's request: no answer
                    self.send({"id": message["id"], "result": None})

    async def close(self) -> None:
        self.reading.cancel()
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()


async def window(path: str, texts: list[str], name: str) -> tuple[SocketClient, dict[str, Any]]:
    """A client that initializes, waits for the models, and completes once in each of `texts`."""
    client = await SocketClient.connect(path)
    await client.request("initialize", {"processId": None, "capabilities": {}})
    client.notify("initialized", {})
    while (status := await client.request("spec-lsp/status"))["state"] == "loading":
        await asyncio.sleep(0.1)
    if status["state"] != "ready":
        raise ServerError(f"model load failed: {status['error']}")
    for i, text in enumerate(texts):
        uri = f"file:///bench/{name}/doc{i}.py"
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        client.notify("textDocument/didOpen", {"textDocument": doc})
        params = {
            "textDocument": {"uri": uri},
            "position": end_position(text),
            "context": {"triggerKind": 2},
        }
        await client.request("textDocument/inlineCompletion", params)
    return client, (await client.request("spec-lsp/status"))["session"]


async def listening(proc: subprocess.Popen[bytes], path: Path) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise ServerError("spec-lsp serve --socket did not start")
        await asyncio.sleep(0.1)


async def measure(preset: str, device: str, clients: int, docs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "shared.sock"
        argv = child_command("-m", "spec_lsp.cli", "serve", "--preset", preset, "--device", device)
        argv += ["--socket", str(path), "--log-level", "WARNING"]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        connected: list[SocketClient] = []
        try:
            await listening(proc, path)
            srcs = sources()
            rss: list[float] = []
            sessions = []
            for n in range(clients):
                texts = [srcs[(n * docs + i) % len(srcs)] for i in range(docs)]
                client, session = await window(str(path), texts, f"c{n + 1}")
                connected.append(client)
                sessions.append(session)
                await asyncio.sleep(IDLE_S)
                rss.append(rss_mb(proc.pid))
            status = await connected[0].request("spec-lsp/status")
        finally:
            for client in connected:
                await client.close()
            proc.terminate()
            proc.wait(60)
    return {
        "preset": preset,
        "clients": clients,
        "docsPerClient": docs,
        "rssMbAfterClient": [round(r, 1) for r in rss],
        "sessions": sessions,
        "connected": status["clients"],
    }


def main(preset: str, device: str, clients: int, docs: int, json_path: str | None) -> int:
    figures = asyncio.run(measure(preset, device, clients, docs))
    rss = figures["rssMbAfterClient"]
    print(f"{'clients connected':>18} | {'server RSS (MB)':>15} | {'one server per window':>22}")
    for n, mb in enumerate(rss, start=1):
        print(f"{n:>18} | {mb:>15.0f} | {n * rss[0]:>22.0f}")
    if json_path:
        Path(json_path).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main("bundled", "auto", 3, 2, None))
