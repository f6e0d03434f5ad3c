"""Context from other files, on a real server over LSP: does a suggestion use names that only the
other file defines, and what does each keystroke prefill with that file's chunk in the prompt?

Starts `spec-lsp serve --preset P` and, as an editor would, opens `report.py` (`import invoices`)
and types its code one character at a time, an inline request after each keystroke; at each
point where a name of `invoices.py` is the natural continuation (`invoices.compute_`) the user
pauses for the suggestion. That is the baseline (no other file: would the name come anyway?).
Then `report.py` is closed, `invoices.py` (a dataclass and two functions with distinctive names)
opened, a pause (the ring takes its chunk on the next request after a pause), and the same
typing again. Prefill figures are `spec-lsp/stats`' `kvReuse` over the model calls made while
typing (the first request of `report.py`, which prefills the whole prompt, apart).

    .venv/bin/python tools/bench_crossfile.py --preset bundled --json /tmp/crossfile.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from typing import Any

from spec_lsp.replay.client import LspClient, ServerError
from spec_lsp.replay.replayer import _initialize, _wait_ready, default_server_cmd

DEFS_URI, USE_URI = "file:///bench/invoices.py", "file:///bench/report.py"
DEFS = """from dataclasses import dataclass


@dataclass
class InvoiceLine:
    description: str
    quantity: int
    unit_price: float


def compute_invoice_total(lines, tax_rate):
    subtotal = sum(line.quantity * line.unit_price for line in lines)
    return round(subtotal * (1 + tax_rate), 2)


def format_currency(amount):
    return f"EUR {amount:,.2f}"
"""
USE_HEAD = '"""The monthly report."""\n\nimport invoices\n\n'
# What the user types into report.py; "|" marks a point where they pause for the suggestion.
TYPED = (
    "lines = [invoices.|InvoiceLine('widget', 2, 9.5)]\n"
    "total = invoices.compute_|invoice_total(lines, 0.2)\n"
    "print(invoices.format_|currency(total))\n"
)
NAMES = sorted(set(re.findall(r"^(?:class|def) (\w+)", DEFS, re.M)))  # defined only in A


def other_names(line: str, suggestion: str, before: str) -> list[str]:
    """Names of the other file that the line completed with the suggestion shows, and that the
    current file did not have before this line."""
    return [n for n in NAMES if n in line + suggestion and n not in before]


async def settled(
    client: LspClient, done: asyncio.Future[dict[str, Any]], timeout_s: float
) -> str | None:
    """The answer's first suggestion ("" for none), or None when it did not come in time."""
    try:
        result = await client.result(done, "textDocument/inlineCompletion", timeout_s)
    except ServerError:
        if client.closed.is_set():
            raise
        return None
    items = (result or {}).get("items", []) if isinstance(result, dict) else result or []
    return str(items[0]["insertText"]) if items else ""


class Editor:
    """One document of the client, typed into at its end, an inline request per keystroke."""

    def __init__(self, client: LspClient, uri: str, text: str) -> None:
        self.client, self.uri, self.text, self.version = client, uri, text, 1
        client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
        )

    def end(self) -> dict[str, int]:
        lines = self.text.split("\n")
        return {"line": len(lines) - 1, "character": len(lines[-1])}

    def ask(self) -> asyncio.Future[dict[str, Any]]:
        params = {
            "textDocument": {"uri": self.uri},
            "position": self.end(),
            "context": {"triggerKind": 2},
        }
        return self.client.send_request("textDocument/inlineCompletion", params)

    def type(self, ch: str) -> asyncio.Future[dict[str, Any]]:
        pos = self.end()
        self.version += 1
        self.text += ch
        change = {"range": {"start": pos, "end": pos}, "text": ch}
        self.client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": self.uri, "version": self.version},
                "contentChanges": [change],
            },
        )
        return self.ask()


def kv(stats: dict[str, Any]) -> tuple[int, int, int]:
    k = stats["kvReuse"]
    return stats["generated"], k["prefilledTokens"], k["promptTokens"]


async def session(client: LspClient, args: argparse.Namespace, other_file: bool) -> dict[str, Any]:
    """One typing session into report.py (closed after); invoices.py opened first when
    `other_file` (it stays open: the ring keeps its chunk)."""
    if other_file:
        Editor(client, DEFS_URI, DEFS)
        await asyncio.sleep(args.pause_s)
    before = kv(await client.request("spec-lsp/stats", {}))
    editor = Editor(client, USE_URI, USE_HEAD)
    first = await settled(client, editor.ask(), args.timeout_s)  # the whole prompt's prefill
    start = kv(await client.request("spec-lsp/stats", {}))
    points, done = [], None
    typed = "".join(TYPED.splitlines(keepends=True)[: args.lines])
    for i, ch in enumerate(typed):
        if ch != "|":
            done = editor.type(ch)
            await asyncio.sleep(args.pace_ms / 1000)
            continue
        assert done is not None
        t0 = time.perf_counter()
        suggestion = await settled(client, done, args.timeout_s)
        ms = (time.perf_counter() - t0) * 1000
        text, line = editor.text.rsplit("\n", 1)
        rest = re.match(r"\w*", typed[i + 1 :]).group()  # type: ignore[union-attr]
        shown = suggestion or ""  # None: no answer within --timeout-s
        point: dict[str, Any] = {"line": line, "suggestion": suggestion, "waitedMs": ms}
        point["names"] = other_names(line, shown, text)  # anywhere in the suggestion
        point["exact"] = bool(rest) and shown.startswith(rest)  # the name the user types next
        points.append(point)
        await asyncio.sleep(args.pause_s)
    if done is not None:
        await settled(client, done, args.timeout_s)
    end = kv(await client.request("spec-lsp/stats", {}))
    client.notify("textDocument/didClose", {"textDocument": {"uri": USE_URI}})
    calls, prefilled, prompt = (b - a for a, b in zip(start, end, strict=True))
    return {
        "otherFile": other_file,
        "firstSuggestion": first,
        "firstPrefill": start[1] - before[1],
        "points": points,
        "hits": sum(bool(p["names"]) for p in points),
        "exact": sum(bool(p["exact"]) for p in points),
        "keystrokes": len(typed) - typed.count("|"),
        "modelCalls": calls,
        "prefilledTokens": prefilled,
        "prefilledPerCall": prefilled / calls if calls else None,
        "promptTokensPerCall": prompt / calls if calls else None,
    }


def cpu_model() -> str:
    with open("/proc/cpuinfo") as f:  # Linux; elsewhere the tool is not measured
        return next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    """The tool's core: one server, the baseline session (no other file ever opened: the ring is
    empty), then the session with invoices.py opened first; the server's counters and the CPU."""
    log = open(args.log, "wb") if args.log else None  # noqa: SIM115
    client = LspClient(default_server_cmd(args.preset), log)
    await client.start()
    try:
        options: dict[str, Any] = {"preset": args.preset}
        if args.max_tokens:
            options["maxTokens"] = args.max_tokens
        await _initialize(client, "utf-16", options)
        await _wait_ready(client, 600.0)
        baseline = await session(client, args, False)
        runs = {"crossfile": await session(client, args, True), "baseline": baseline}
        stats = await client.request("spec-lsp/stats", {})
    finally:
        await client.stop()
        if log is not None:
            log.close()
    server = {k: stats[k] for k in ("requests", "answered", "cancelled", "stale", "empty")}
    server["latencyMs"] = stats["latencyMs"]["total"]
    return {
        "preset": args.preset,
        "paceMs": args.pace_ms,
        "cpu": cpu_model(),
        "runs": runs,
        "server": server,
    }


def report(result: dict[str, Any]) -> None:
    print(f"preset {result['preset']}, {result['paceMs']} ms per character, {result['cpu']}")
    for label, run in result["runs"].items():
        print(f"{label} ({'invoices.py opened first' if run['otherFile'] else 'no other file'}):")
        for p in run["points"]:
            found = ", ".join(p["names"]) or "none"
            print(
                f"  {p['line']!r} -> {p['suggestion']!r}  other file's names: {found}, "
                f"the name typed next: {'yes' if p['exact'] else 'no'}"
                f"  (waited {p['waitedMs']:.0f} ms)"
            )
        per = run["prefilledPerCall"]
        per_s = "-" if per is None else f"{per:.2f}"
        print(
            f"  {run['hits']}/{len(run['points'])} points show a name of invoices.py, "
            f"{run['exact']} begin with the name typed next; typing "
            f"{run['keystrokes']} keystrokes: {run['modelCalls']} model calls, "
            f"{run['prefilledTokens']} tokens prefilled, {per_s} per call "
            f"(first request of report.py: {run['firstPrefill']})"
        )


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--preset", default="bundled")
    p.add_argument("--pace-ms", type=float, default=80.0, help="between typed characters")
    p.add_argument("--pause-s", type=float, default=1.5, help="the user's pause at a point")
    p.add_argument("--max-tokens", type=int, help="the server's maxTokens (default: its own)")
    p.add_argument("--timeout-s", type=float, default=120.0, help="for one suggestion")
    p.add_argument("--lines", type=int, default=None, help="type only the first N lines")
    p.add_argument("--log", metavar="PATH", help="the server's stderr")
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    return p


def main() -> None:
    args = parser().parse_args()
    try:
        result = asyncio.run(bench(args))
    except ServerError as exc:
        raise SystemExit(f"bench_crossfile: {exc}") from None
    report(result)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
