"""`spec-lsp bench repo --merge`: several runs' JSON reports as one.

The full bench is hours of a two-core machine (4 server rows and llama-server's row at ~330
holes), more than one sitting holds, so it is run in parts: some packages now, the rest later
(`--packages`), or llama-server's row apart from the server's (`--rows`). Merging takes their
reports and gives the report one run would have written: the packages, the holes and each row's
answers put together, every figure recomputed from the answers (`repo_score.summarize`), and
`rows_on_common_holes` over the holes that every row answered, so a row run on fewer holes is
compared on the holes it shares.

The parts must ask the same question: the same preset, seed, maxTokens, open files and package
set (else
`MergeError` says which differs). A hole one row answered in two parts keeps the first part's
answer, and the merge says so (`duplicates`). Each part's plan, and whether it was cut short,
stays in `parts`.

It knows nothing of servers; it reads and writes JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spec_lsp.benchmarks.repo import common, per_package, table
from spec_lsp.benchmarks.repo_score import Score, summarize

# Plan fields every part must share (with their value in reports written before the field was).
SAME = {
    "preset": None,
    "seed": None,
    "max_tokens": None,
    "open_files": None,
    "package_set": "pypi",
    "cut": "name",
}


class MergeError(ValueError):
    """Reports that cannot be merged: unreadable, or asking different questions."""


def load(path: Path) -> dict[str, Any]:
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MergeError(f"{path}: not a readable JSON report ({exc})") from None
    if not isinstance(report, dict) or not {"plan", "packages", "answers"} <= report.keys():
        raise MergeError(f"{path}: not a `bench repo` report (no plan, packages or answers)")
    return report


def merge(reports: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """One report from (name, report) pairs, in order."""
    if not reports:
        raise MergeError("nothing to merge")
    first_name, first = reports[0]
    for name, report in reports[1:]:
        for key, old in SAME.items():
            mine, theirs = report["plan"].get(key, old), first["plan"].get(key, old)
            if mine != theirs:
                raise MergeError(
                    f"{name} asks with {key} {mine!r}, {first_name} with {theirs!r}: "
                    "not the same bench"
                )
    packages: dict[str, dict[str, Any]] = {}
    holes: dict[str, dict[str, Any]] = {}
    answers: dict[str, dict[str, Score]] = {}
    duplicates: list[str] = []
    for _, report in reports:
        for package in report["packages"]:
            known = packages.setdefault(package["label"], dict(package))
            known["holes"] = max(known["holes"], package["holes"])
            known["tests_run"] = known["tests_run"] or package["tests_run"]
        for hole in report.get("holes", []):
            holes.setdefault(f"{hole['package']}/{hole['path']}:{hole['start']}", hole)
        for row, scores in report["answers"].items():
            mine = answers.setdefault(row, {})
            for data in scores:
                s = Score(**data)
                if s.hole in mine:
                    duplicates.append(f"{row} {s.hole}")
                    continue
                mine[s.hole] = s
    scores = {row: list(by_hole.values()) for row, by_hole in answers.items()}
    return {
        "preset": first["preset"],
        "plan": first["plan"] | {"rows": list(scores)},
        "packages": list(packages.values()),
        "holes": list(holes.values()),
        "interrupted": any(r.get("interrupted") for _, r in reports),
        "rows": {row: summarize(s) for row, s in scores.items()},
        "rows_on_common_holes": common(scores),
        "per_package": per_package(scores, list(packages)),
        "test_runs": sum(r.get("test_runs", 0) for _, r in reports),
        "server_messages": [m for _, r in reports for m in r.get("server_messages", [])],
        "answers": {row: [vars(s) for s in mine] for row, mine in scores.items()},
        "parts": [
            {"file": name, "plan": r["plan"], "interrupted": r.get("interrupted", False)}
            for name, r in reports
        ],
        "duplicates": duplicates,
    }


def main(paths: list[Path], json_path: str | None) -> int:
    """Merges the reports at `paths`, prints the table, writes the merged report when asked."""
    import sys

    try:
        merged = merge([(str(p), load(p)) for p in paths])
    except MergeError as exc:
        print(f"spec-lsp bench repo --merge: {exc}", file=sys.stderr)
        return 1
    if merged["duplicates"]:
        print(
            f"{len(merged['duplicates'])} answers given twice; the first part's kept "
            f"(e.g. {merged['duplicates'][0]})",
            file=sys.stderr,
        )
    if json_path:
        Path(json_path).write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")
    print(table(merged))
    return 0
