"""`spec-lsp bench next-edit`: next edit suggestions asked of the real server, scored per case.

For each case (`next_edit_cases`) it opens the case's text under a fresh uri, sends the history
hunks but the last as incremental didChange notifications (version + 1 each), asks one untimed
`textDocument/copilotInlineEdit` where the last hunk starts (the document is then warm: an editor
asked before the user's latest edit), sends the last hunk, asks the timed request at the cursor
with the current version, and closes the document. Scores, with B the document after the
history, P = B with the predicted edit applied and E = B with the expected edit applied:

- exact match: P == E (the whole documents' texts);
- edit similarity: difflib's `SequenceMatcher(autojunk=False).ratio()` between the changed
  regions of P and E. The region is the smallest span of B that holds both minimal edits
  (`diff_edit(B, P)` and `diff_edit(B, E)`); each side is that span with its own edit applied.
  Edits whose spans of B are apart (not overlapping or touching) score 0.0, as does no
  suggestion (P == B), so an edit elsewhere earns nothing for the text between; the mean is
  over all positive cases;
- quiet (negative cases): the answer changes nothing (no edit, or an edit that leaves B as is);
- latency: the timed request, from sending it to its answer, p50/p90 in ms (all of them, and
  those answered with an edit);
- cost: what the server's `spec-lsp/stats` (`nextEdit`) counted for the timed request: prompt
  tokens prefilled (the rest came from the rewrite's cached KV), prefill ms and the server's CPU
  time from request to answer (run with one thread, what the request cost however busy the
  machine), and the answer's confidence (the least probability of a departure from the region);
- gate: suggested on positives, exact matches and quiet on negatives had the server shown only
  answers of at least each confidence in `GATES` (from the rows: an answer under the server's
  own gate is no answer at any of them);
- decode: the server's own `nextEdit.decode` figures from `spec-lsp/stats` after the run
  (tokens per verify pass, None when the backend counted no pass; tokens/s); with
  `compare="target-only"` the cases run again with `{"speculation": "off"}`, and the ratio of
  the two tokens/s is the rewrite's decode speed with copy drafts over target-only.

The cases are mined from the history up to `rev` (default HEAD; a fixed commit mines the same
cases whatever has been committed since, so runs at different times compare case by case), and
`every` > 1 runs every `every`-th of them (a subset of the full run's cases, for a quicker rerun).
A run cut short (Ctrl-C, SIGTERM) still prints and writes the cases it finished, `interrupted`.

It speaks LSP over stdio through the replayer's client and start-up (`replay/`), like an editor;
it knows nothing of the server's insides. Prints a table; `json_path` gets every figure and the
per-case rows.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from spec_lsp.benchmarks.next_edit_cases import (
    Case,
    after_history,
    apply,
    head_commit,
    mine,
    repo_root,
)
from spec_lsp.replay.analysis import percentiles
from spec_lsp.replay.client import LspClient, ServerError
from spec_lsp.replay.document import Edit, diff_edit, offset_of, position_of
from spec_lsp.replay.handshake import initialize, wait_ready
from spec_lsp.replay.replayer import default_server_cmd

METHOD = "textDocument/copilotInlineEdit"
TIMEOUT_S = 600.0  # one answer of a real model on a slow CPU (a cold prompt, a long region)
LOAD_TIMEOUT_S = 600.0
TARGET_ONLY = {"speculation": "off"}
GATES = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)  # confidence gates `gate_curve` reports


def apply_inline_edit(text: str, edit: dict[str, Any]) -> str:
    """`text` with an InlineEdit's `range` (UTF-16 positions) replaced by its `text`."""
    start = edit["range"]["start"]
    end = edit["range"]["end"]
    lo = offset_of(text, int(start["line"]), int(start["character"]))
    hi = max(lo, offset_of(text, int(end["line"]), int(end["character"])))
    return text[:lo] + str(edit["text"]) + text[hi:]


def edit_similarity(base: str, predicted: str, expected: str) -> float:
    """Character-level similarity of the regions the two edits of `base` changed (see above)."""
    if predicted == base:
        return 0.0
    p, e = diff_edit(base, predicted), diff_edit(base, expected)
    if max(p.start, e.start) > min(p.start + p.old_len, e.start + e.old_len):
        return 0.0  # apart
    lo = min(p.start, e.start)
    hi = max(p.start + p.old_len, e.start + e.old_len)

    def region(start: int, old_len: int, new: str) -> str:
        return base[lo:start] + new + base[start + old_len : hi]

    a, b = region(p.start, p.old_len, p.text), region(e.start, e.old_len, e.text)
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def score(case: Case, base: str, answer: Any, version: int) -> dict[str, Any]:
    """One case's row from the timed answer (`{"edits": [...]}`) for `base` at `version`."""
    edits = answer.get("edits") if isinstance(answer, dict) else None
    edit = edits[0] if edits else None
    stale = edit is not None and edit.get("textDocument", {}).get("version") != version
    predicted = base if edit is None or stale else apply_inline_edit(base, edit)
    row: dict[str, Any] = {
        "id": case.id,
        "positive": case.positive,
        "history": len(case.history),
        "edits": len(edits or []),
        "stale": stale,
        "suggested": predicted != base,
        "predicted": None if edit is None else {"range": edit["range"], "text": edit["text"]},
    }
    if case.expected is None:
        return row | {"quiet": predicted == base}
    want = apply(base, case.expected)
    start = position_of(base, case.expected.start)
    end = position_of(base, case.expected.start + case.expected.old_len)
    return row | {
        "expected": {"range": {"start": start, "end": end}, "text": case.expected.text},
        "exact": predicted == want,
        "similarity": round(edit_similarity(base, predicted, want), 4),
    }


async def _ask(client: LspClient, uri: str, version: int, offset: int, text: str) -> Any:
    """copilotInlineEdit at a str offset of `text` (clamped to its end)."""
    params = {
        "textDocument": {"uri": uri, "version": version},
        "position": position_of(text, min(offset, len(text))),
    }
    return await client.request(METHOD, params, timeout=TIMEOUT_S)


def _change(client: LspClient, uri: str, version: int, text: str, edit: Edit) -> str:
    """Sends `edit` of `text` as an incremental didChange to `version`; the text after it."""
    change = {
        "range": {
            "start": position_of(text, edit.start),
            "end": position_of(text, edit.start + edit.old_len),
        },
        "text": edit.text,
    }
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
    )
    return apply(text, edit)


async def _next_edit_stats(client: LspClient) -> dict[str, Any]:
    stats = await client.request("spec-lsp/stats", {}, timeout=30.0)
    return (stats or {}).get("nextEdit") or {}


async def _settled_stats(client: LspClient, before: dict[str, Any]) -> dict[str, Any]:
    """The stats once the timed request's rewrite has ended: one that answered early goes on
    writing the rest of the region, and counts its prefill when it ends."""
    after = await _next_edit_stats(client)
    deadline = time.monotonic() + TIMEOUT_S
    while after.get("early", 0) > before.get("early", 0) and time.monotonic() < deadline:
        ended = (after.get("decode") or {}).get("rewrites", 0) + after.get("cancelled", 0)
        if ended > (before.get("decode") or {}).get("rewrites", 0) + before.get("cancelled", 0):
            break
        await asyncio.sleep(0.2)
        after = await _next_edit_stats(client)
    return after


def _spent(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What the server counted for the timed request: its rewrite's prompt tokens prefilled
    (the rest of the prompt came from the rewrite's cached KV), prefill ms, and the server's
    CPU time from request to answer; the answer's confidence."""
    b, a = before.get("decode") or {}, after.get("decode") or {}
    return {
        "prefilled_tokens": a.get("prefilledTokens", 0) - b.get("prefilledTokens", 0),
        "prefill_ms": round(a.get("prefillMs", 0.0) - b.get("prefillMs", 0.0), 1),
        "cpu_ms": round(after.get("cpuMs", 0.0) - before.get("cpuMs", 0.0), 1),
        "confidence": after.get("confidence"),
    }


async def run_case(client: LspClient, case: Case, n: int) -> dict[str, Any]:
    """Open, the history but its last edit, an untimed request (the document is then warm, as
    it is for an editor that asked before the user's latest edit), the last edit, the timed
    request, close: the case's scored row."""
    uri = f"file:///bench/{n}/{quote(case.path)}"
    item = {"uri": uri, "languageId": case.language, "version": 1, "text": case.text}
    client.notify("textDocument/didOpen", {"textDocument": item})
    text, version = case.text, 1
    for edit in case.history[:-1]:
        version += 1
        text = _change(client, uri, version, text, edit)
    # untimed, where the last edit starts (the cursor's offset when there is none)
    warm_at = case.history[-1].start if case.history else case.cursor
    await _ask(client, uri, version, warm_at, text)
    for edit in case.history[-1:]:
        version += 1
        text = _change(client, uri, version, text, edit)
    before = await _next_edit_stats(client)
    t0 = time.perf_counter()
    answer = await _ask(client, uri, version, case.cursor, text)
    ms = (time.perf_counter() - t0) * 1000.0
    spent = _spent(before, await _settled_stats(client, before))
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    row = score(case, after_history(case), answer, version)
    return row | {"latency_ms": round(ms, 2)} | spent


async def run_cases(
    cases: list[Case],
    server_cmd: list[str],
    init_options: dict[str, Any],
    log: IO[bytes],
    progress: Callable[[str], None],
    rows: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One server for all cases: the rows, the server's status before and stats after. Each
    row is appended to `rows` as it is scored, so a run cut short keeps what it asked."""
    client = LspClient(server_cmd, log)
    await client.start()
    rows = [] if rows is None else rows
    try:
        await initialize(client, "utf-16", init_options)
        status = await wait_ready(client, LOAD_TIMEOUT_S)
        for n, case in enumerate(cases, start=1):
            row = await run_case(client, case, n)
            rows.append(row)
            progress(
                f"case {n}/{len(cases)} {case.id}: {_verdict(row)}, {row['latency_ms']:.0f} ms, "
                f"{row['prefilled_tokens']} tokens prefilled, CPU {row['cpu_ms']:.0f} ms, "
                f"confidence {row['confidence']}"
            )
        stats = await client.request("spec-lsp/stats", {}, timeout=30.0)
    finally:
        messages = list(client.messages)
        await client.stop(timeout=30.0)
    return {"status": status, "stats": stats, "rows": rows, "messages": messages}


def _verdict(row: dict[str, Any]) -> str:
    if not row["positive"]:
        return "quiet" if row["quiet"] else "suggested (negative)"
    if row["exact"]:
        return "exact"
    return f"similarity {row['similarity']:.2f}" if row["suggested"] else "nothing suggested"


def _latency(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return percentiles([r["latency_ms"] for r in rows], (50, 90)) | {"n": len(rows)}


def gate_curve(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each confidence gate of `GATES`: the share of positives suggested, their exact
    matches and the share of negatives kept quiet, had only answers at or over it been shown.
    An answer without a confidence (from a kept rewrite, no model call) passes every gate."""
    pos = [r for r in rows if r["positive"]]
    neg = [r for r in rows if not r["positive"]]

    def shown(r: dict[str, Any], gate: float) -> bool:
        c = r.get("confidence")
        return bool(r["suggested"]) and (c is None or c >= gate)

    return [
        {
            "gate": gate,
            "suggested_on_positives": sum(shown(r, gate) for r in pos) / len(pos) if pos else None,
            "exact_matches": sum(shown(r, gate) and r["exact"] for r in pos),
            "quiet_on_negatives": sum(not shown(r, gate) for r in neg) / len(neg) if neg else None,
        }
        for gate in GATES
    ]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def figures(rows: list[dict[str, Any]], stats: Any) -> dict[str, Any]:
    """The run's figures from its rows and the server's `spec-lsp/stats` after it."""
    pos = [r for r in rows if r["positive"]]
    neg = [r for r in rows if not r["positive"]]
    next_edit = (stats or {}).get("nextEdit") or {}
    decode = next_edit.get("decode") or {}
    exact = sum(r["exact"] for r in pos)
    quiet = sum(r["quiet"] for r in neg)
    return {
        "positives": len(pos),
        "negatives": len(neg),
        "exact_matches": exact,
        "exact_match": exact / len(pos) if pos else None,
        "edit_similarity": sum(r["similarity"] for r in pos) / len(pos) if pos else None,
        "suggested_on_positives": sum(r["suggested"] for r in pos) / len(pos) if pos else None,
        "quiet_negatives": quiet,
        "quiet_on_negatives": quiet / len(neg) if neg else None,
        "stale_answers": sum(r["stale"] for r in rows),
        "latency_ms": _latency(rows),
        "latency_ms_suggested": _latency([r for r in rows if r["suggested"]]),
        "prefilled_tokens": percentiles([r.get("prefilled_tokens", 0) for r in rows], (50, 90))
        | {"mean": _mean([r.get("prefilled_tokens", 0) for r in rows])},
        "cpu_ms": percentiles([r.get("cpu_ms", 0.0) for r in rows], (50, 90))
        | {"mean": _mean([r.get("cpu_ms", 0.0) for r in rows])},
        "gate": gate_curve(rows),
        "tokens_per_pass": decode.get("tokensPerPass") if decode.get("targetForwards") else None,
        "decode_tokens_per_s": decode.get("tokensPerS"),
        "server_next_edit": next_edit,
    }


def _run(cases: list[Case], cmd: list[str], init: dict[str, Any], label: str) -> dict[str, Any]:
    """One run in its own event loop; the server's stderr goes to a log shown on failure."""

    def progress(line: str) -> None:
        print(f"[{label}] {line}", file=sys.stderr, flush=True)

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryFile() as log:
        try:
            run = asyncio.run(run_cases(cases, cmd, init, log, progress, rows))
        except ServerError as exc:
            log.seek(0)
            tail = log.read().decode("utf-8", "replace")[-3000:]
            raise ServerError(f"{exc}\n--- server log (tail) ---\n{tail}") from None
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the cases so far, without server stats
            progress(f"interrupted after {len(rows)} of {len(cases)} cases")
            run = {"rows": rows, "stats": None, "status": None, "messages": [], "cut": True}
    return {"label": label, "init_options": init, "figures": figures(run["rows"], run["stats"])} | {
        "server_status": run["status"],
        "server_messages": run["messages"],
        "rows": run["rows"],
        "interrupted": run.get("cut", False),
    }


def _speed_ratio(runs: list[dict[str, Any]]) -> float | None:
    if len(runs) < 2:
        return None
    spec = runs[0]["figures"]["decode_tokens_per_s"]
    plain = runs[1]["figures"]["decode_tokens_per_s"]
    return round(spec / plain, 3) if spec and plain else None


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _num(v: Any, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _p50_p90(latency: dict[str, Any]) -> str:
    return f"{_num(latency['p50'], 1)} / {_num(latency['p90'], 1)}"


def print_table(report: dict[str, Any]) -> None:
    runs = report["runs"]
    print(
        f"next edit: {report['repo']} at {report['head'][:12]}, preset {report['preset']}, "
        f"{report['cases']['positive']} positive + {report['cases']['negative']} negative cases"
        + (f" (every {report['every']}th of the mined set)" if report.get("every", 1) > 1 else "")
        + (" - interrupted: the cases answered so far" if report.get("interrupted") else "")
    )
    rows: list[tuple[str, list[str]]] = [("", [r["label"] for r in runs])]
    for name, cell in (
        ("exact match", lambda f: f"{_pct(f['exact_match'])} ({f['exact_matches']})"),
        ("edit similarity (mean)", lambda f: _num(f["edit_similarity"], 3)),
        ("suggested on positives", lambda f: _pct(f["suggested_on_positives"])),
        (
            "quiet on negatives",
            lambda f: f"{_pct(f['quiet_on_negatives'])} ({f['quiet_negatives']})",
        ),
        ("latency p50 / p90 (ms)", lambda f: _p50_p90(f["latency_ms"])),
        ("  answers with an edit", lambda f: _p50_p90(f["latency_ms_suggested"])),
        ("prefilled tokens p50 / p90", lambda f: _p50_p90(f["prefilled_tokens"])),
        ("server CPU ms p50 / p90", lambda f: _p50_p90(f["cpu_ms"])),
        ("tokens per verify pass", lambda f: _num(f["tokens_per_pass"])),
        ("rewrite decode (tok/s)", lambda f: _num(f["decode_tokens_per_s"], 1)),
    ):
        rows.append((name, [cell(r["figures"]) for r in runs]))
    width = max(len(name) for name, _ in rows)
    for name, cells in rows:
        print(f"{name:<{width}}  " + "  ".join(f"{c:>16}" for c in cells))
    for g in runs[0]["figures"]["gate"]:
        print(
            f"gate {g['gate']:.2f}: suggested on positives {_pct(g['suggested_on_positives'])}, "
            f"exact {g['exact_matches']}, quiet on negatives {_pct(g['quiet_on_negatives'])}"
        )
    if (ratio := report["decode_speed_ratio"]) is not None:
        print(f"rewrite decode speed, copy drafts / target-only: {ratio:.2f}x")


def main(
    repo: str,
    preset: str,
    limit: int,
    negatives: int,
    json_path: str | None,
    compare: str | None = None,
    device: str = "auto",
    rev: str = "HEAD",
    every: int = 1,
) -> int:
    """Mines the cases (history up to `rev`; every `every`-th of them), runs them (and again
    target-only with `compare`), prints the table, writes `json_path`. A run cut short (Ctrl-C,
    SIGTERM) reports the cases it finished, marked `interrupted`."""
    head = head_commit(repo, rev)
    cases = mine(repo, limit, negatives, rev=head)[:: max(1, every)]
    positive = sum(c.positive for c in cases)
    print(f"{positive} positive + {len(cases) - positive} negative cases", file=sys.stderr)
    cmd = default_server_cmd(preset) + ["--device", device, "--log-level", "WARNING"]
    plans = [("spec", {"preset": preset})]
    if compare == "target-only":
        plans.append(("target-only", {"preset": preset} | TARGET_ONLY))
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a kill ends it as Ctrl-C does
    runs: list[dict[str, Any]] = []
    for label, init in plans:
        runs.append(_run(cases, cmd, init, label))
        if runs[-1]["interrupted"]:
            break
    report = {
        "repo": str(repo_root(repo)),
        "head": head,
        "rev": rev,
        "every": every,
        "preset": preset,
        "cases": {"positive": positive, "negative": len(cases) - positive},
        "interrupted": runs[-1]["interrupted"],
        "decode_speed_ratio": _speed_ratio(runs),
        "runs": runs,
    }
    print_table(report)
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=2))
    return 0
