"""`spec-lsp bench syntax`: what the syntax stop callback saves, on the engine benchmark prompts.

Each prompt (a cursor at the start of a statement inside a function body, cut from the standard
library by `spec_lsp.benchmarks.prompts`) is completed twice, greedy and cold: without a stop
callback, then with the syntax layer's streaming stop. The cursor's line is the line being written,
so the suffix is the file after that line. It prints tokens generated, time, how each run ended,
whether the trimmed suggestion is the same both ways, and the tokens generated past the final cut
(those that began after the end of the shown suggestion: latency for nothing), as a table and
optionally JSON. It
knows the engine's contract and the syntax package's cutter, nothing of LSP or the server.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def main(preset: str, device: str, max_new: int, count: int, json_path: str | None) -> int:
    from spec_lsp.engine.loading import ModelLoadError
    from spec_lsp.presets import load_preset_engine

    try:
        engine = load_preset_engine(preset, device)
    except ModelLoadError as exc:
        print(f"spec-lsp: {exc}", file=sys.stderr)
        return 1
    report = measure(engine, count, max_new)
    report["preset"], report["device"] = preset, str(getattr(engine, "device", device))
    _print(report)
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
    return 0


def suffix_after_line(name: str) -> str:
    """The source after the prompt's line (`name` is "file:line" under the stdlib directory)."""
    from spec_lsp.benchmarks.prompts import stdlib_dir

    path, _, line = name.rpartition(":")
    source = (stdlib_dir() / path).read_text(encoding="utf-8")
    lines = source.splitlines(keepends=True)
    return "\n" + "".join(lines[int(line) :])


def measure(engine: Any, count: int, max_new: int) -> dict[str, Any]:
    from spec_lsp.benchmarks.prompts import bench_prompts
    from spec_lsp.engine.api import GenerationRequest
    from spec_lsp.syntax import cutter_for

    rows = []
    for prompt in bench_prompts(count):
        suffix = suffix_after_line(prompt.name)
        cutter = cutter_for("python", prompt.text, suffix)
        row: dict[str, Any] = {"prompt": prompt.name, "mode": cutter.mode}
        timed = _Timed(cutter.stop)
        for label, stop in (("plain", _Timed(None)), ("stop", timed)):
            t0 = time.perf_counter()
            result = engine.generate(
                GenerationRequest(
                    prompt.text, max_new_tokens=max_new, stop_callback=stop, reuse_kv=False
                )
            )
            shown = cutter_for("python", prompt.text, suffix).trim(result.text)
            row[label] = {
                "tokens": result.stats.generated_tokens,
                "ms": round((time.perf_counter() - t0) * 1000, 1),
                "stop_reason": result.stats.stop_reason,
                "shown": shown,
                "past_cut": stop.tokens_past(len(shown or "")),
            }
        row["stop"]["callback_calls"] = timed.calls
        row["stop"]["callback_us"] = round(timed.seconds * 1e6, 1)
        row["same_suggestion"] = row["plain"]["shown"] == row["stop"]["shown"]
        rows.append(row)
    return {"max_new_tokens": max_new, "rows": rows, "totals": _totals(rows)}


class _Timed:
    """The stop callback (None: only watch), with the time spent in it (it runs on every decode
    step) and the text length after each token, to count the tokens generated past the cut."""

    def __init__(self, stop: Any) -> None:
        self._stop, self.calls, self.seconds = stop, 0, 0.0
        self.lengths: list[int] = []

    def __call__(self, text: str) -> int | None:
        self.lengths.append(len(text))
        if self._stop is None:
            return None
        t0 = time.perf_counter()
        try:
            return self._stop(text)  # type: ignore[no-any-return]
        finally:
            self.calls += 1
            self.seconds += time.perf_counter() - t0

    def tokens_past(self, cut: int) -> int:
        """Tokens that began at or after character `cut` of the raw text (wasted latency)."""
        starts = [0, *self.lengths[:-1]]
        return sum(start >= cut for start in starts)


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    plain = sum(r["plain"]["tokens"] for r in rows)
    stop = sum(r["stop"]["tokens"] for r in rows)
    plain_ms = sum(r["plain"]["ms"] for r in rows)
    stop_ms = sum(r["stop"]["ms"] for r in rows)
    return {
        "prompts": len(rows),
        "tokens_plain": plain,
        "tokens_stop": stop,
        "tokens_saved_pct": round(100 * (plain - stop) / plain, 1) if plain else 0.0,
        "ms_plain": round(plain_ms, 1),
        "ms_stop": round(stop_ms, 1),
        "callback_stops": sum(r["stop"]["stop_reason"] == "callback" for r in rows),
        "callback_us_per_call": round(
            sum(r["stop"]["callback_us"] for r in rows)
            / max(1, sum(r["stop"]["callback_calls"] for r in rows)),
            1,
        ),
        "same_suggestion": sum(bool(r["same_suggestion"]) for r in rows),
        "tokens_past_cut_plain": sum(r["plain"]["past_cut"] for r in rows),
        "tokens_past_cut_stop": sum(r["stop"]["past_cut"] for r in rows),
    }


def _print(report: dict[str, Any]) -> None:
    print(f"{'prompt':<28} {'mode':<7} {'plain':>6} {'stop':>6} {'past':>5} {'reason':<10} same")
    for r in report["rows"]:
        print(
            f"{r['prompt']:<28} {r['mode']:<7} {r['plain']['tokens']:>6} {r['stop']['tokens']:>6} "
            f"{r['stop']['past_cut']:>5} {r['stop']['stop_reason']:<10} "
            f"{'yes' if r['same_suggestion'] else 'NO'}"
        )
    t = report["totals"]
    print(
        f"tokens: {t['tokens_plain']} without the callback, {t['tokens_stop']} with it "
        f"({t['tokens_saved_pct']}% saved); time {t['ms_plain']} ms -> {t['ms_stop']} ms; "
        f"stopped by the callback {t['callback_stops']}/{t['prompts']} "
        f"({t['callback_us_per_call']} us per call); "
        f"same suggestion {t['same_suggestion']}/{t['prompts']}; "
        f"tokens generated past the final cut: {t['tokens_past_cut_stop']} with the callback, "
        f"{t['tokens_past_cut_plain']} without"
    )
