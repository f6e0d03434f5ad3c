"""`spec-lsp bench server`: figures for the language server, measured on the real server process.

- typing through: server time (request read -> answer) for keystrokes answered from the pending
  or last suggestion, from `spec-lsp/stats` (`latencyMs.typedThrough`);
- supersede: time from cancelling a running generation to the engine returning (`latencyMs.stop`);
- memory: the server's resident set with the models loaded, and after completing in N documents;
- KV reuse: prompt tokens prefilled per model call while typing a file one character at a time.

It starts `spec-lsp serve` and speaks LSP to it over stdio through the replayer's client
(`replay/client.py`), like an editor would; it knows nothing of the server's insides. Prints a
table and writes JSON with `json_path`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from spec_lsp.interpreter import child_command
from spec_lsp.replay.client import LspClient, ServerError

TIMEOUT_S = 600.0  # one answer on a slow CPU, or the model load


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """A process's resident memory now (`VmRSS`) or at its peak so far (`VmHWM`), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
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


async def call(client: LspClient, method: str, params: Any = None) -> Any:
    return await client.request(method, params, timeout=TIMEOUT_S)


async def start(preset: str, device: str) -> tuple[LspClient, float]:
    argv = child_command("-m", "spec_lsp.cli", "serve", "--preset", preset, "--device", device)
    client = LspClient(argv + ["--log-level", "WARNING"], stderr=sys.stderr.buffer)
    await client.start()
    try:
        await call(
            client,
            "initialize",
            {"processId": None, "rootUri": None, "capabilities": {}, "initializationOptions": {}},
        )
        client.notify("initialized", {})
        t0 = time.perf_counter()
        while (status := await call(client, "spec-lsp/status"))["state"] == "loading":
            await asyncio.sleep(0.1)
        if status["state"] != "ready":
            raise ServerError(f"model load failed: {status['error']}")
    except BaseException:
        await client.stop(timeout=30.0)
        raise
    return client, time.perf_counter() - t0


def end_position(text: str) -> dict[str, int]:
    lines = text.split("\n")
    return {"line": len(lines) - 1, "character": len(lines[-1].encode("utf-16-le")) // 2}


def open_doc(client: LspClient, uri: str, text: str) -> None:
    item = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    client.notify("textDocument/didOpen", {"textDocument": item})


def insert_at_end(client: LspClient, uri: str, version: int, text: str, typed: str) -> None:
    pos = end_position(text)
    change = {"range": {"start": pos, "end": pos}, "text": typed}
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
    )


def inline(client: LspClient, uri: str, pos: dict[str, int]) -> asyncio.Future[dict[str, Any]]:
    return client.send_request(
        "textDocument/inlineCompletion",
        {"textDocument": {"uri": uri}, "position": pos, "context": {"triggerKind": 2}},
    )


async def answer(client: LspClient, pending: asyncio.Future[dict[str, Any]]) -> Any:
    return await client.result(pending, "textDocument/inlineCompletion", TIMEOUT_S)


async def type_file(client: LspClient, source: str, chars: int) -> dict[str, Any]:
    """Types `chars` characters after the first 40 lines, one request per keystroke, in order."""
    cut = source.index("\n", len("\n".join(source.split("\n")[:40])))
    text, to_type = source[: cut + 1], source[cut + 1 : cut + 1 + chars]
    uri = "file:///bench/typing.py"
    open_doc(client, uri, text)
    before = first = await call(client, "spec-lsp/stats")
    round_trips = []
    for version, ch in enumerate(to_type, start=2):
        if version == 3:  # the first keystroke prefills the whole prompt; steady state after it
            before = await call(client, "spec-lsp/stats")
        insert_at_end(client, uri, version, text, ch)
        text += ch
        t0 = time.perf_counter()
        await answer(client, inline(client, uri, end_position(text)))
        round_trips.append((time.perf_counter() - t0) * 1000)
    after = await call(client, "spec-lsp/stats")
    return typing_figures(first, before, after, len(to_type), sorted(round_trips))


def typing_figures(
    first: dict[str, Any],
    before: dict[str, Any],
    after: dict[str, Any],
    keystrokes: int,
    round_trips: list[float],
) -> dict[str, Any]:
    """The typing phase's figures from three `spec-lsp/stats` snapshots (first keystroke, second
    keystroke, end) and the sorted round trips."""
    generated = after["generated"] - before["generated"]
    prefilled = after["kvReuse"]["prefilledTokens"] - before["kvReuse"]["prefilledTokens"]
    prompt = after["kvReuse"]["promptTokens"] - before["kvReuse"]["promptTokens"]
    all_calls = after["generated"] - first["generated"]
    all_prefilled = after["kvReuse"]["prefilledTokens"] - first["kvReuse"]["prefilledTokens"]
    return {
        "keystrokes": keystrokes,
        "prefilled_per_model_call_with_first": all_prefilled / all_calls if all_calls else None,
        "model_calls": all_calls,
        "typed_through": after["typedThrough"] - first["typedThrough"],
        "cache_hits": after["cacheHits"] - before["cacheHits"],
        "prefilled_per_model_call": prefilled / generated if generated else None,
        "prompt_tokens_per_model_call": prompt / generated if generated else None,
        "typed_through_server_ms": after["latencyMs"]["typedThrough"],
        "round_trip_ms_p50": round_trips[len(round_trips) // 2],
    }


async def supersede(client: LspClient, source: str, n: int) -> dict[str, Any]:
    """Starts a long generation, waits until it runs, then types something it did not predict."""
    client.notify("workspace/didChangeConfiguration", {"settings": {"maxTokens": 256}})
    before = (await call(client, "spec-lsp/stats"))["latencyMs"]["stop"]["n"]
    lines = source.split("\n")
    for i in range(n):
        uri = f"file:///bench/supersede{i}.py"
        text = "\n".join(lines[: 20 + i]) + f"\n\ndef helper_{i}(values):\n    "
        open_doc(client, uri, text)
        first = inline(client, uri, end_position(text))
        while not first.done() and (await call(client, "spec-lsp/stats"))["streaming"] == 0:
            await asyncio.sleep(0.005)
        if first.done():  # finished before it could be cancelled: no sample
            await answer(client, first)
            continue
        insert_at_end(client, uri, 2, text, "§")  # not what the model predicts
        await answer(client, first)
    stats = await call(client, "spec-lsp/stats")
    return {
        "cancelled_mid_generation": stats["latencyMs"]["stop"]["n"] - before,
        **stats["latencyMs"]["stop"],
    }


async def many_documents(client: LspClient, srcs: list[str], n: int) -> dict[str, Any]:
    client.notify("workspace/didChangeConfiguration", {"settings": {"maxTokens": 16}})
    start_mb = rss_mb(client.pid)
    for i in range(n):
        src = srcs[i % len(srcs)].split("\n")
        text = "\n".join(src[: 30 + 7 * i % 200]) + "\n"
        uri = f"file:///bench/doc{i}.py"
        open_doc(client, uri, text)
        await answer(client, inline(client, uri, end_position(text)))
    end_mb = rss_mb(client.pid)
    # The worker returns freed memory to the OS once it is idle (malloc_trim): what a user's
    # server holds while they read, rather than the peak of the last prefill.
    await asyncio.sleep(1.0)
    settled_mb = rss_mb(client.pid)
    return {
        "documents": n,
        "rss_before_mb": start_mb,
        "rss_after_mb": end_mb,
        "rss_added_mb": end_mb - start_mb,
        "rss_settled_mb": settled_mb,
        "rss_added_settled_mb": settled_mb - start_mb,
    }


async def measure(
    preset: str,
    device: str,
    chars: int,
    docs: int,
    supersedes: int,
    max_tokens: int,
    phases: set[str],
) -> dict[str, Any]:
    srcs = sources()
    client, load_s = await start(preset, device)
    try:
        status = await call(client, "spec-lsp/status")
        ready_mb, load_peak_mb = rss_mb(client.pid), rss_mb(client.pid, "VmHWM")
        client.notify("workspace/didChangeConfiguration", {"settings": {"maxTokens": max_tokens}})
        typing = await type_file(client, srcs[0], chars) if "typing" in phases else None
        stop = await supersede(client, srcs[1], supersedes) if "supersede" in phases else None
        memory = await many_documents(client, srcs, docs) if "memory" in phases else None
        final = await call(client, "spec-lsp/stats")
        peak_mb = rss_mb(client.pid, "VmHWM")
    finally:
        code = await client.stop(timeout=30.0)
    return {
        "preset": preset,
        "device": status["device"],
        "load_s": load_s,
        "rss_ready_mb": ready_mb,
        "rss_peak_loading_mb": load_peak_mb,  # the most resident while loading the models
        "rss_peak_mb": peak_mb,  # the most resident over the whole run
        "typing": typing,
        "supersede_stop_ms": stop,
        "memory": memory,
        "exit_code": code,
        "final_stats": final,
    }


def main(
    preset: str,
    device: str,
    chars: int,
    docs: int,
    supersedes: int,
    max_tokens: int,
    phases: str,
    json_path: str | None,
) -> int:
    wanted = set(phases.split(","))
    report = asyncio.run(measure(preset, device, chars, docs, supersedes, max_tokens, wanted))
    print_table(report)
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=2))
    return 0


def print_table(r: dict[str, Any]) -> None:
    rows = [
        ("preset / device", f"{r['preset']} / {r['device']}"),
        ("model load (s)", f"{r['load_s']:.1f}"),
        ("RSS with models loaded (MB)", f"{r['rss_ready_mb']:.0f}"),
        ("peak RSS while loading (MB)", f"{r['rss_peak_loading_mb']:.0f}"),
        ("peak RSS over the run (MB)", f"{r['rss_peak_mb']:.0f}"),
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
