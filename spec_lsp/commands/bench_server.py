"""`spec-lsp bench server`: figures for the language server, measured on the real server process.

- typing through: server time (request read -> answer) for keystrokes answered from the pending
  or last suggestion, from `spec-lsp/stats` (`latencyMs.typedThrough`);
- supersede: time from cancelling a running generation to the engine returning (`latencyMs.stop`);
- memory: the server's resident set with the models loaded, and after completing in N documents;
- KV reuse: prompt tokens prefilled per model call while typing a file one character at a time.

It talks to `spec-lsp serve` over stdio with a minimal JSON-RPC client (no pygls here), like an
editor would. Prints a table and writes JSON with --json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def register_bench(bsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = bsub.add_parser("server", help="language server figures: typing through, stop, RSS, KV")
    p.add_argument("--preset", default="bundled")
    p.add_argument("--device", default="auto")
    p.add_argument("--chars", type=int, default=120, help="characters typed one at a time")
    p.add_argument("--docs", type=int, default=100, help="documents opened and completed in")
    p.add_argument("--supersedes", type=int, default=10, help="generations cancelled mid-way")
    p.add_argument("--max-tokens", type=int, default=16, help="maxTokens while typing")
    p.add_argument("--phases", default="typing,supersede,memory", help="which figures to measure")
    p.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    p.set_defaults(func=run)


class RpcClient:
    """Just enough LSP client: framed JSON over the server's stdin/stdout, one message at a time."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._next = 0
        self.responses: dict[int, dict[str, Any]] = {}

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Any = None) -> int:
        self._next += 1
        self.send({"id": self._next, "method": method, "params": params})
        return self._next

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        length = 0
        while (line := self.proc.stdout.readline().strip()) != b"":
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if not length:
            raise RuntimeError("the server closed its output")
        message: dict[str, Any] = json.loads(self.proc.stdout.read(length))
        return message

    def wait(self, msg_id: int) -> Any:
        while msg_id not in self.responses:
            message = self._read()
            if "id" in message and "method" in message:  # a request from the server
                self.send({"id": message["id"], "result": None})
            elif "id" in message:
                self.responses[message["id"]] = message
        reply = self.responses.pop(msg_id)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply.get("result")

    def call(self, method: str, params: Any = None) -> Any:
        return self.wait(self.request(method, params))

    def close(self) -> int:
        self.call("shutdown")
        self.notify("exit", None)
        return self.proc.wait(timeout=30)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def sources() -> list[str]:
    """Python files from the standard library: real code to type, nothing downloaded."""
    import json as json_pkg
    import textwrap

    root = Path(textwrap.__file__).parent
    names = ["textwrap.py", "shlex.py", "fnmatch.py", "bisect.py", "heapq.py", "colorsys.py"]
    files = [root / n for n in names] + [Path(json_pkg.__file__).parent / "decoder.py"]
    return [f.read_text() for f in files if f.exists()]


def start(preset: str, device: str) -> tuple[RpcClient, float]:
    argv = [sys.executable, "-m", "spec_lsp.cli", "serve", "--preset", preset, "--device", device]
    client = RpcClient(argv + ["--log-level", "WARNING"])
    client.call(
        "initialize",
        {"processId": None, "rootUri": None, "capabilities": {}, "initializationOptions": {}},
    )
    client.notify("initialized", {})
    t0 = time.perf_counter()
    while (status := client.call("spec-lsp/status"))["state"] == "loading":
        time.sleep(0.1)
    if status["state"] != "ready":
        raise RuntimeError(f"model load failed: {status['error']}")
    return client, time.perf_counter() - t0


def end_position(text: str) -> dict[str, int]:
    lines = text.split("\n")
    return {"line": len(lines) - 1, "character": len(lines[-1].encode("utf-16-le")) // 2}


def open_doc(client: RpcClient, uri: str, text: str) -> None:
    item = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    client.notify("textDocument/didOpen", {"textDocument": item})


def inline(client: RpcClient, uri: str, pos: dict[str, int]) -> int:
    return client.request(
        "textDocument/inlineCompletion",
        {"textDocument": {"uri": uri}, "position": pos, "context": {"triggerKind": 2}},
    )


def type_file(client: RpcClient, source: str, chars: int) -> dict[str, Any]:
    """Types `chars` characters after the first 40 lines, one request per keystroke, in order."""
    cut = source.index("\n", len("\n".join(source.split("\n")[:40])))
    text, to_type = source[: cut + 1], source[cut + 1 : cut + 1 + chars]
    uri = "file:///bench/typing.py"
    open_doc(client, uri, text)
    before = first = client.call("spec-lsp/stats")
    round_trips = []
    for version, ch in enumerate(to_type, start=2):
        if version == 3:  # the first keystroke prefills the whole prompt; steady state after it
            before = client.call("spec-lsp/stats")
        pos = end_position(text)
        change = {"range": {"start": pos, "end": pos}, "text": ch}
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
        )
        text += ch
        t0 = time.perf_counter()
        client.wait(inline(client, uri, end_position(text)))
        round_trips.append((time.perf_counter() - t0) * 1000)
    after = client.call("spec-lsp/stats")
    generated = after["generated"] - before["generated"]
    prefilled = after["kvReuse"]["prefilledTokens"] - before["kvReuse"]["prefilledTokens"]
    prompt = after["kvReuse"]["promptTokens"] - before["kvReuse"]["promptTokens"]
    round_trips.sort()
    all_calls = after["generated"] - first["generated"]
    all_prefilled = after["kvReuse"]["prefilledTokens"] - first["kvReuse"]["prefilledTokens"]
    return {
        "keystrokes": len(to_type),
        "prefilled_per_model_call_with_first": all_prefilled / all_calls if all_calls else None,
        "model_calls": all_calls,
        "typed_through": after["typedThrough"] - first["typedThrough"],
        "cache_hits": after["cacheHits"] - before["cacheHits"],
        "prefilled_per_model_call": prefilled / generated if generated else None,
        "prompt_tokens_per_model_call": prompt / generated if generated else None,
        "typed_through_server_ms": after["latencyMs"]["typedThrough"],
        "round_trip_ms_p50": round_trips[len(round_trips) // 2],
    }


def supersede(client: RpcClient, source: str, n: int) -> dict[str, Any]:
    """Starts a long generation, waits until it runs, then types something it did not predict."""
    client.notify("workspace/didChangeConfiguration", {"settings": {"maxTokens": 256}})
    before = client.call("spec-lsp/stats")["latencyMs"]["stop"]["n"]
    lines = source.split("\n")
    for i in range(n):
        uri = f"file:///bench/supersede{i}.py"
        text = "\n".join(lines[: 20 + i]) + f"\n\ndef helper_{i}(values):\n    "
        open_doc(client, uri, text)
        first = inline(client, uri, end_position(text))
        while first not in client.responses and client.call("spec-lsp/stats")["streaming"] == 0:
            time.sleep(0.005)
        if first in client.responses:  # finished before it could be cancelled: no sample
            client.wait(first)
            continue
        pos = end_position(text)
        change = {"range": {"start": pos, "end": pos}, "text": "§"}  # not what the model predicts
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [change]},
        )
        client.wait(first)
    stats = client.call("spec-lsp/stats")
    return {
        "cancelled_mid_generation": stats["latencyMs"]["stop"]["n"] - before,
        **stats["latencyMs"]["stop"],
    }


def many_documents(client: RpcClient, srcs: list[str], n: int) -> dict[str, Any]:
    client.notify("workspace/didChangeConfiguration", {"settings": {"maxTokens": 16}})
    start_mb = rss_mb(client.proc.pid)
    for i in range(n):
        src = srcs[i % len(srcs)].split("\n")
        text = "\n".join(src[: 30 + 7 * i % 200]) + "\n"
        uri = f"file:///bench/doc{i}.py"
        open_doc(client, uri, text)
        client.wait(inline(client, uri, end_position(text)))
    end_mb = rss_mb(client.proc.pid)
    # The worker returns freed memory to the OS once it is idle (malloc_trim): what a user's
    # server holds while they read, rather than the peak of the last prefill.
    time.sleep(1.0)
    settled_mb = rss_mb(client.proc.pid)
    return {
        "documents": n,
        "rss_before_mb": start_mb,
        "rss_after_mb": end_mb,
        "rss_added_mb": end_mb - start_mb,
        "rss_settled_mb": settled_mb,
        "rss_added_settled_mb": settled_mb - start_mb,
    }


def run(args: argparse.Namespace) -> int:
    srcs = sources()
    client, load_s = start(args.preset, args.device)
    try:
        status = client.call("spec-lsp/status")
        ready_mb = rss_mb(client.proc.pid)
        client.notify(
            "workspace/didChangeConfiguration", {"settings": {"maxTokens": args.max_tokens}}
        )
        phases = set(args.phases.split(","))
        typing = type_file(client, srcs[0], args.chars) if "typing" in phases else None
        stop = supersede(client, srcs[1], args.supersedes) if "supersede" in phases else None
        docs = many_documents(client, srcs, args.docs) if "memory" in phases else None
        final = client.call("spec-lsp/stats")
    finally:
        code = client.close()
    report = {
        "preset": args.preset,
        "device": status["device"],
        "load_s": load_s,
        "rss_ready_mb": ready_mb,
        "typing": typing,
        "supersede_stop_ms": stop,
        "memory": docs,
        "exit_code": code,
        "final_stats": final,
    }
    print_table(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


def print_table(r: dict[str, Any]) -> None:
    rows = [
        ("preset / device", f"{r['preset']} / {r['device']}"),
        ("model load (s)", f"{r['load_s']:.1f}"),
        ("RSS with models loaded (MB)", f"{r['rss_ready_mb']:.0f}"),
    ]
    if (m := r["memory"]) is not None:
        rows.append((f"RSS added by {m['documents']} documents (MB)", f"{m['rss_added_mb']:.0f}"))
        rows.append(
            (
                f"RSS added by {m['documents']} documents, 1 s idle later (MB)",
                f"{m['rss_added_settled_mb']:.0f}",
            )
        )
    if (t := r["typing"]) is not None:
        tt = t["typed_through_server_ms"]
        calls = f"{t['keystrokes']} / {t['model_calls']} / {t['typed_through']}"
        rows += [
            ("keystrokes / model calls / typed through", calls),
            ("typed-through server ms p50/p90/p99", _pcts(tt, 2)),
            ("prefilled tokens per model call (typing)", _fmt(t["prefilled_per_model_call"])),
            (
                "  same, counting the first keystroke",
                _fmt(t["prefilled_per_model_call_with_first"]),
            ),
            ("prompt tokens per model call (typing)", _fmt(t["prompt_tokens_per_model_call"])),
        ]
    if (s := r["supersede_stop_ms"]) is not None:
        rows.append((f"supersede stop ms p50/p90/p99 (n={s['n']})", _pcts(s, 1)))
    rows.append(("server exit code", str(r["exit_code"])))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


def _pcts(d: dict[str, float], digits: int) -> str:
    return " / ".join(f"{d[q]:.{digits}f}" for q in ("p50", "p90", "p99"))


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"
