"""`spec-lsp bench load`: the real server process under many open documents and steady typing.

Opens `docs` documents (1,000 by default; standard-library Python files, each made distinct), then
types into `typed` of them (50) at `rate` keystrokes per second in all (20), round-robin, for
`seconds`: each keystroke is a one-character didChange followed by an automatic inlineCompletion
request, as an editor sends them. Every second it samples the server's resident set, threads and
open file descriptors from /proc. It prints RSS over time, request latency p50/p99 (request sent to
response read), and threads and descriptors before and after, beside the budgets that bound the
server's memory: the engine's KV budget (an LRU over documents' KV states, in MB and documents),
and the open documents themselves (their text and one syntax tree each, bounded only by what the
client opens). First it reports the load itself: seconds from the server's start to ready, the
resident set's peak while loading (VmHWM) and the resident set once loaded (`--docs 0 --seconds
0`: the load alone). Linux only (/proc).

It speaks LSP over stdio through the one JSON-RPC client (`replay/client.py`), like an editor.
"""

from __future__ import annotations

import asyncio
import functools
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from spec_lsp.benchmarks.server import sources
from spec_lsp.interpreter import child_command
from spec_lsp.replay.client import LspClient, ServerError

TIMEOUT_S = 600.0  # the model load on a slow CPU
SNIPPET = "total = compute(value, 42) + offset\n"


@dataclass
class Sample:
    t: float  # seconds since typing began (negative: before)
    rss_mb: float
    threads: int
    fds: int
    phase: str
    peak_mb: float = 0.0  # the process's peak RSS so far (VmHWM): at "loaded", loading's peak


def sample(pid: int, t: float, phase: str) -> Sample:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = {k: v.split() for k, _, v in (line.partition(":") for line in status)}
    rss, peak = (int(fields[k][0]) / 1024 for k in ("VmRSS", "VmHWM"))
    fds = len(list(Path(f"/proc/{pid}/fd").iterdir()))
    threads = int(fields["Threads"][0])
    return Sample(round(t, 2), round(rss, 1), threads, fds, phase, round(peak, 1))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def start(preset: str, device: str, max_tokens: int) -> LspClient:
    argv = child_command("-m", "spec_lsp.cli", "serve", "--preset", preset, "--device", device)
    client = LspClient(argv + ["--log-level", "WARNING"], stderr=sys.stderr.buffer)
    await client.start()
    options = {"maxTokens": max_tokens}
    params = {"processId": None, "capabilities": {}, "initializationOptions": options}
    await client.request("initialize", params, timeout=TIMEOUT_S)
    client.notify("initialized", {})
    deadline = time.monotonic() + TIMEOUT_S
    while (status := await client.request("spec-lsp/status"))["state"] == "loading":
        if time.monotonic() > deadline:
            raise ServerError("the model did not load in time")
        await asyncio.sleep(0.2)
    if status["state"] != "ready":
        raise ServerError(f"the model did not load: {status.get('error')}")
    return client


def open_documents(client: LspClient, count: int) -> list[tuple[str, int, int]]:
    """Opens `count` documents; returns (uri, line, col) of the end of each (where typing goes)."""
    texts = sources()
    ends = []
    for i in range(count):
        text = f"{texts[i % len(texts)]}\n# document {i}\n"
        uri = f"file:///spec-lsp-load/doc{i:04d}.py"
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        client.notify("textDocument/didOpen", {"textDocument": doc})
        ends.append((uri, text.count("\n"), 0))
    return ends


async def type_into(
    client: LspClient, docs: list[tuple[str, int, int]], rate: float, seconds: float
) -> tuple[list[float], dict[str, int]]:
    """Types round-robin into `docs`; returns request latencies (ms) and answer counts."""
    loop = asyncio.get_running_loop()
    latencies: list[float] = []
    counts = {"requests": 0, "suggested": 0, "empty": 0, "errors": 0}
    cursors = {uri: (line, col, 1) for uri, line, col in docs}  # (line, col, version)
    uris = list(cursors)
    pending: list[asyncio.Future[Any]] = []
    t0 = loop.time()
    for k in range(int(rate * seconds)):
        await asyncio.sleep(max(0.0, t0 + k / rate - loop.time()))
        uri = uris[k % len(uris)]
        line, col, version = cursors[uri]
        ch = SNIPPET[(k // len(cursors)) % len(SNIPPET)]
        pos = {"line": line, "character": col}
        client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": version + 1},
                "contentChanges": [{"range": {"start": pos, "end": pos}, "text": ch}],
            },
        )
        line, col = (line + 1, 0) if ch == "\n" else (line, col + 1)
        cursors[uri] = (line, col, version + 1)
        params = {
            "textDocument": {"uri": uri},
            "position": {"line": line, "character": col},
            "context": {"triggerKind": 2},
        }
        sent = loop.time()
        done = client.send_request("textDocument/inlineCompletion", params)
        done.add_done_callback(functools.partial(_count, sent, latencies, counts, loop))
        counts["requests"] += 1
        pending.append(done)
    if pending:
        await asyncio.wait(pending, timeout=120)
    return latencies, counts


def _count(
    sent: float,
    latencies: list[float],
    counts: dict[str, int],
    loop: asyncio.AbstractEventLoop,
    done: asyncio.Future[Any],
) -> None:
    latencies.append((loop.time() - sent) * 1000)
    response = done.result()
    if "error" in response:
        counts["errors"] += 1
    elif (response.get("result") or {}).get("items"):
        counts["suggested"] += 1
    else:
        counts["empty"] += 1


async def sampler(pid: int, t0: float, samples: list[Sample], stop: asyncio.Event) -> None:
    while not stop.is_set():
        samples.append(sample(pid, time.monotonic() - t0, "typing"))
        await asyncio.sleep(1.0)


async def run(
    preset: str, device: str, docs: int, typed: int, rate: float, seconds: float, max_tokens: int
) -> dict[str, Any]:
    started = time.monotonic()
    client = await start(preset, device, max_tokens)
    load_seconds = time.monotonic() - started
    try:
        pid = client.pid
        samples = [sample(pid, -1, "loaded")]
        ends = open_documents(client, docs)
        await client.request("spec-lsp/status", timeout=TIMEOUT_S)  # every open is handled
        samples.append(sample(pid, 0, f"{docs} documents open"))
        stop, t0 = asyncio.Event(), time.monotonic()
        watcher = asyncio.create_task(sampler(pid, t0, samples, stop))
        latencies, counts = await type_into(client, ends[:typed], rate, seconds)
        stop.set()
        await watcher
        await asyncio.sleep(2.0)  # the worker goes idle and hands free memory back
        samples.append(sample(pid, time.monotonic() - t0, "idle after typing"))
        stats = await client.request("spec-lsp/stats", timeout=TIMEOUT_S)
    finally:
        code = await client.stop()
    return {
        "preset": preset,
        "documents": docs,
        "typedDocuments": typed,
        "keystrokesPerSecond": rate,
        "seconds": seconds,
        "maxTokens": max_tokens,
        "latencyMs": {
            "p50": round(percentile(latencies, 0.5), 1),
            "p99": round(percentile(latencies, 0.99), 1),
            "mean": round(statistics.fmean(latencies), 1) if latencies else None,
        },
        "answers": counts,
        "samples": [asdict(s) for s in samples],
        "serverStats": {k: stats.get(k) for k in ("documents", "kvReuse", "cancelled", "stale")},
        "budgets": budgets(),
        "exitCode": code,
        "wallSeconds": round(time.monotonic() - started, 1),
        # The server process from its start to the model ready (Python, torch, the pair), and
        # its resident set's peak meanwhile (VmHWM) beside the resident set once loaded.
        "loadSeconds": round(load_seconds, 1),
        "loadPeakMb": samples[0].peak_mb,
        "loadedMb": samples[0].rss_mb,
    }


def budgets() -> dict[str, Any]:
    from spec_lsp.engine.engine import EngineOptions  # imports torch: only once measured

    o = EngineOptions()
    return {"kvBudgetMb": o.kv_budget_mb, "kvMaxDocuments": o.max_docs}


def print_report(r: dict[str, Any]) -> None:
    print(
        f"spec-lsp bench load: {r['documents']} documents open, typing into {r['typedDocuments']} "
        f"at {r['keystrokesPerSecond']:g} keystrokes/s for {r['seconds']:g} s "
        f"(preset {r['preset']}, maxTokens {r['maxTokens']})"
    )
    samples = r["samples"]
    print(
        f"load: {r['loadSeconds']:g} s from the server's start to ready; RSS peak while loading "
        f"{r['loadPeakMb']:.0f} MB, {r['loadedMb']:.0f} MB once loaded"
    )
    typing = [s for s in samples if s["phase"] == "typing"]
    shown = [s for s in samples if s["phase"] != "typing"][:2]
    step = max(1, len(typing) // 10)
    shown += typing[::step] + [s for s in samples if s["phase"] == "idle after typing"]
    print(f"{'t (s)':>8} {'RSS MB':>8} {'threads':>8} {'fds':>5}  phase")
    for s in shown:
        print(f"{s['t']:>8.1f} {s['rss_mb']:>8.1f} {s['threads']:>8} {s['fds']:>5}  {s['phase']}")
    lat, a = r["latencyMs"], r["answers"]
    print(
        f"requests {a['requests']}: {a['suggested']} with a suggestion, {a['empty']} empty, "
        f"{a['errors']} errors; latency p50 {lat['p50']} ms, p99 {lat['p99']} ms"
    )
    first, last = samples[1], samples[-1]
    print(
        f"threads {first['threads']} -> {last['threads']}, open fds {first['fds']} -> "
        f"{last['fds']}; RSS {first['rss_mb']:.0f} MB with the documents open -> peak "
        f"{max(s['rss_mb'] for s in samples):.0f} MB -> {last['rss_mb']:.0f} MB idle"
    )
    b = r["budgets"]
    print(
        f"memory bounds: KV states {b['kvBudgetMb']:g} MB over at most {b['kvMaxDocuments']} "
        f"documents (LRU); open documents: their text and one syntax tree each, as many as "
        f"the client opens ({samples[1]['rss_mb'] - samples[0]['rss_mb']:.0f} MB for "
        f"{r['documents']} here); server exit code {r['exitCode']}"
    )


def main(
    preset: str = "tiny",
    device: str = "cpu",
    docs: int = 1000,
    typed: int = 50,
    rate: float = 20.0,
    seconds: float = 180.0,
    max_tokens: int = 16,
    json_path: str | None = None,
) -> int:
    result = asyncio.run(run(preset, device, docs, min(typed, docs), rate, seconds, max_tokens))
    print_report(result)
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=2) + "\n")
    return 0
