"""Automatic inline requests' latency on two servers, the same requests alternating between them.

Both servers (any two commands, e.g. the code before and after a change) are started, loaded and
sent the same messages over LSP: at each of N positions of a Python file (the first half of an
indented line, the line's rest removed, the rest of the file after it), the document is opened,
then the line's next characters are typed one at a time, each followed by an automatic inline
request that is answered before the next key (a slow typist who sees every suggestion). Each step
goes to both servers, one after the other, the order swapping at every step, so drift of the
machine hits both alike. The first request at each position (a cold prefill of the file) is
reported apart from the keystrokes' requests. Prefetch is off and the debounce 0 in both
(`--init-options` to change), so only the requests' own path and model calls are timed.

    OMP_NUM_THREADS=2 .venv/bin/python tools/bench_automatic.py --preset bundled \\
      --server "new=env -C /tmp PYTHONPATH=/tmp/new python -m spec_lsp.cli serve" \\
      --server "old=env -C /tmp PYTHONPATH=/tmp/old python -m spec_lsp.cli serve"

(`env -C /tmp`: run outside the checkout, so its own `spec_lsp` is not the one imported.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from spec_lsp.replay.client import LspClient
from spec_lsp.replay.replayer import _initialize, _wait_ready

sys.path.insert(0, str(Path(__file__).parent))
from bench_accept import positions  # noqa: E402


class Server:
    def __init__(self, label: str, cmd: list[str]) -> None:
        self.label = label
        self.client = LspClient(cmd)
        self.cold: list[float] = []
        self.keys: list[float] = []
        self.shown = 0

    async def start(self, options: dict[str, Any]) -> None:
        await self.client.start()
        await _initialize(self.client, "utf-16", options)
        status = await _wait_ready(self.client, 900.0)
        print(f"{self.label}: ready {json.dumps(status)[:160]}", file=sys.stderr, flush=True)

    async def ask(self, uri: str, line: int, char: int) -> float:
        params = {
            "textDocument": {"uri": uri},
            "position": {"line": line, "character": char},
            "context": {"triggerKind": 2},  # Automatic
        }
        t0 = time.perf_counter()
        result = await self.client.request("textDocument/inlineCompletion", params, 120.0)
        ms = (time.perf_counter() - t0) * 1000.0
        self.shown += bool(result and result.get("items"))
        return ms


def change(uri: str, version: int, line: int, char: int, text: str) -> dict[str, Any]:
    at = {"line": line, "character": char}
    return {
        "textDocument": {"uri": uri, "version": version},
        "contentChanges": [{"range": {"start": at, "end": at}, "text": text}],
    }


async def position(servers: list[Server], i: int, text: str, after: str, keys: str) -> None:
    """One position: open `text` + `after` with the cursor between them, ask (cold), then type
    `keys` one at a time at the cursor, asking after each."""
    line = text.count("\n")
    char = len(text) - (text.rfind("\n") + 1)
    uri = f"file:///bench/automatic/{i}.py"
    for step in range(len(keys) + 1):
        order = servers if step % 2 == 0 else servers[::-1]
        for server in order:
            if step == 0:
                doc = {"uri": uri, "languageId": "python", "version": 1, "text": text + after}
                server.client.notify("textDocument/didOpen", {"textDocument": doc})
                server.cold.append(await server.ask(uri, line, char))
                continue
            key = keys[step - 1]
            edit = change(uri, step + 1, line, char + step - 1, key)
            server.client.notify("textDocument/didChange", edit)
            server.keys.append(await server.ask(uri, line, char + step))
    for server in servers:
        server.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})


def summary(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "p50": None, "p90": None}
    q = statistics.quantiles(values, n=10) if len(values) > 1 else [values[0]] * 9
    return {"n": len(values), "p50": round(statistics.median(values), 1), "p90": round(q[8], 1)}


async def main(args: argparse.Namespace) -> None:
    options = {"preset": args.preset, "prefetch": False, "debounceMs": 0}
    options |= json.loads(args.init_options)
    servers = []
    for spec in args.server:
        label, cmd = spec.split("=", 1)
        servers.append(Server(label, shlex.split(cmd)))
    for server in servers:  # one at a time: loading two models at once would time the loads
        await server.start(options)
    text = Path(args.file).read_text(encoding="utf-8")
    for i, (before, _) in enumerate(positions(text, args.n)):
        row = before.count("\n")
        line = text.split("\n")[row]
        typed = before.split("\n")[-1]
        rest_of_line = line[len(typed) :]
        after = "\n" + "\n".join(text.split("\n")[row + 1 :])  # the line's rest removed
        await position(servers, i, before, after, rest_of_line[: args.keys])
        print(
            f"position {i}: " + ", ".join(f"{s.label} {s.keys[-1]:.0f} ms" for s in servers),
            file=sys.stderr,
            flush=True,
        )
    report = {
        s.label: {"cold": summary(s.cold), "keystrokes": summary(s.keys), "shown": s.shown}
        for s in servers
    }
    for server in servers:
        await server.client.stop()
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report | {"args": vars(args)}, indent=2) + "\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="bundled")
    parser.add_argument("--server", action="append", required=True, help="LABEL=COMMAND (twice)")
    parser.add_argument("--file", default="/usr/lib/python3.11/colorsys.py")
    parser.add_argument("-n", type=int, default=6, help="positions")
    parser.add_argument("--keys", type=int, default=8, help="keystrokes typed at each position")
    parser.add_argument("--init-options", default="{}")
    parser.add_argument("--json", help="write the figures here")
    asyncio.run(main(parser.parse_args()))
