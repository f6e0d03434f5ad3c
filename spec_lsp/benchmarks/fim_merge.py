"""Joining `bench fim` reports of consecutive slices of one problem set into one.

A run over all 1,033 single-line problems with llama-server's rows takes hours on a 2-core CPU;
run in slices (`--offset N --limit M --json PART`), possibly in several sittings, the parts join
here into the report that one run over their union would have written: the rows in order, the
figures recomputed from them (`fim.summarize`), the drafting counters summed. Parts that differ in
what they measured (data, preset, device, holes, generation length, test timeout, threads, the
GGUF llama-server served) or that overlap or leave a gap are refused with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spec_lsp.benchmarks.fim import DRAFT_COUNTS, finish, summarize
from spec_lsp.benchmarks.fim_exec import Row
from spec_lsp.benchmarks.fim_problems import FimError

SAME = ("data", "preset", "device", "widen_to", "max_tokens", "timeout_s", "threads", "gguf")


def read_reports(paths: list[Path]) -> list[dict[str, Any]]:
    reports = []
    for path in paths:
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise FimError(f"{path}: not a readable bench fim report ({exc})") from exc
        if not isinstance(report, dict) or "rows" not in report or "offset" not in report:
            raise FimError(f"{path}: not a bench fim report (no rows or offset)")
        reports.append(report)
    return reports


def merge(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """The report of one run over the union of `reports` (slices of one problem set)."""
    if not reports:
        raise FimError("no reports to merge")
    parts = sorted(reports, key=lambda r: int(r["offset"]))
    first = parts[0]
    modes = list(first["modes"])
    end = int(first["offset"])
    for part in parts:
        for key in SAME:
            if part.get(key) != first.get(key):
                raise FimError(
                    f"the parts differ in {key}: {first.get(key)!r} (offset {first['offset']}) "
                    f"and {part.get(key)!r} (offset {part['offset']})"
                )
        if list(part["modes"]) != modes:
            raise FimError(f"the parts differ in modes: {modes} and {list(part['modes'])}")
        if int(part["offset"]) != end:
            raise FimError(
                f"the parts are not consecutive: one ends before problem {end}, "
                f"the next starts at {part['offset']}"
            )
        end += len(part["rows"][modes[0]])
    rows = {mode: [row for part in parts for row in part["rows"][mode]] for mode in modes}
    report = {key: first.get(key) for key in ("data", "preset", "device")}
    if any(part.get("drafting") for part in parts):
        report["drafting"] = _drafting([part.get("drafting") or {} for part in parts])
    report.update({key: first.get(key) for key in ("offset", *SAME[3:])})
    report["merged_parts"] = len(parts)
    report["modes"] = {mode: summarize([Row(**row) for row in rows[mode]]) for mode in modes}
    report["rows"] = rows
    return report


def _drafting(parts: list[dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {key: sum(int(p.get(key, 0)) for p in parts) for key in DRAFT_COUNTS}
    proposed = total["proposed_tokens"]
    total["acceptance"] = round(total["accepted_tokens"] / proposed, 3) if proposed else 0
    return total


def main(paths: list[Path], json_path: str | None = None) -> int:
    """Merges the reports at `paths`, prints the table, writes the JSON when asked; 1 on a
    FimError (what is wrong, on stderr)."""
    return finish(lambda: merge(read_reports(paths)), json_path)
