"""`spec-lsp bench repo`: completion quality where the code calls what other files define.

The bench, end to end: the packages (`repo_packages`: a pinned default list fetched from PyPI
and cached; `repo_npm`: a pinned list of JavaScript and TypeScript packages from npm, the same
way, `--set npm`; or folders given with `--source`), the holes (`repo_holes`: statements that use a
name imported from another file of the package, sampled with a seed), the rows (`repo_client`:
the real server over stdio, one per context setting; `repo_llama`: llama-server's `/infill` with
llama.vscode's ring chunks), the scores (`repo_score`) and pass@1 where a Python package's own
tests run (`repo_tests`; the npm set has none: its tests need `node_modules` and a runner).
Prints a table; the JSON report holds every figure, the packages and every row's answer at every
hole. Each answer is also logged as it comes (`row {json}`), so a run cut short keeps what it
asked.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from spec_lsp.benchmarks.repo_client import ROWS, Asked, all_rows
from spec_lsp.benchmarks.repo_editor import OPEN_FILES
from spec_lsp.benchmarks.repo_holes import RepoHole, mine, read
from spec_lsp.benchmarks.repo_npm import NPM_PACKAGES
from spec_lsp.benchmarks.repo_npm import local as npm_local
from spec_lsp.benchmarks.repo_npm import prepare as npm_prepare
from spec_lsp.benchmarks.repo_packages import (
    PACKAGES,
    PackageError,
    PackageTree,
    cache_dir,
    local,
    prepare,
)
from spec_lsp.benchmarks.repo_score import Score, score, summarize
from spec_lsp.benchmarks.repo_tests import Judge
from spec_lsp.replay.client import ServerError
from spec_lsp.replay.replayer import default_server_cmd

LLAMA_ROW = "llama_server_ring"
SETS = ("pypi", "npm")  # the pinned package lists: repo_packages's, repo_npm's


@dataclass(frozen=True)
class RepoRun:
    """What one run asks: where, how many, which rows, with what."""

    preset: str = "coder"
    rows: tuple[str, ...] = tuple(ROWS)
    holes: int = 30  # per package
    seed: int = 0
    max_tokens: int = 64
    open_files: int = OPEN_FILES
    tests: bool = True
    timeout_s: float = 120.0
    device: str = "auto"
    threads: int | None = None
    llama_server: str = "auto"
    gguf: Path | None = None
    package_set: str = "pypi"  # one of SETS: which list `--packages` names, how `--source` splits
    cut: str = "name"  # one of `repo_hole.CUTS`: where each hole starts


def server_options(plan: RepoRun) -> dict[str, Any]:
    """The settings every row shares: one request per document (no prefetch), the full window
    (no short cold-file window: every request here is a file's first), `maxTokens` capping a
    whole block's answer too."""
    return {
        "maxTokens": plan.max_tokens,
        "blockTokens": plan.max_tokens,
        "prefetch": False,
        "shortWindow": 0,
    }


def sources(
    names: list[str], folders: list[Path], log: IO[str], package_set: str = "pypi"
) -> list[PackageTree]:
    """The folders given (split as Python, or as JavaScript/TypeScript for the npm set), else
    the set's packages named (all when none is), fetched."""
    if package_set not in SETS:
        raise ValueError(f"no package set {package_set!r} (one of {', '.join(SETS)})")
    npm = package_set == "npm"
    if folders:
        return [(npm_local if npm else local)(folder.resolve()) for folder in folders]
    listed = {p.name for p in (NPM_PACKAGES if npm else PACKAGES)}
    unknown = set(names) - listed
    if unknown:
        raise ValueError(f"not in the {package_set} list: {sorted(unknown)}")

    def say(message: str) -> None:
        print(message, file=log)

    if npm:
        return [
            npm_prepare(p, cache_dir(), say) for p in NPM_PACKAGES if not names or p.name in names
        ]
    return [prepare(p, cache_dir(), say) for p in PACKAGES if not names or p.name in names]


class Scorer:
    """Scores answers as they come, running a package's tests where they pass as shipped."""

    def __init__(self, judge: Judge | None, log: IO[str]) -> None:
        self.judge, self.log = judge, log
        self.runnable: dict[str, bool] = {}
        self.scores: dict[str, list[Score]] = {}
        self.sources: dict[str, PackageTree] = {}

    def add_source(self, source: PackageTree, registry: bool) -> None:
        self.sources[source.label] = source
        ok = self.judge is not None and bool(source.tests) and bool(source.code)
        ok = ok and source.language == "python"  # npm tests need node_modules and a runner
        if ok and self.judge is not None:
            ok = self.judge.runnable(source, registry)
        self.runnable[source.label] = ok

    def __call__(self, row: str, hole: RepoHole, asked: Asked) -> None:
        source = self.sources[hole.package]
        original = read(source.root, hole.path)
        passed = None
        if self.runnable[hole.package] and self.judge is not None:
            filled = hole.filled(original, asked.answer)
            passed = self.judge.passes(source, hole.path, original, filled)
        s = score(hole.key, asked.answer, hole.expected, passed, asked.latency_ms)
        self.scores.setdefault(row, []).append(s)
        mine = self.scores[row]
        exact = sum(x.exact for x in mine)
        print(f"{row} {len(mine)} {hole.key}: exact {exact}/{len(mine)}", file=self.log)
        print("row", json.dumps({"row": row, **asdict(s)}), file=self.log, flush=True)


def _server_rows(
    plan: RepoRun, work: list[tuple[PackageTree, list[RepoHole]]], scorer: Scorer
) -> list[str]:
    """The server's rows from one server; the messages it showed."""
    cmd = default_server_cmd(plan.preset) + ["--device", plan.device, "--log-level", "WARNING"]
    rows = [r for r in ROWS if r in plan.rows]
    work = [(source, holes) for source, holes in work if holes]
    with tempfile.TemporaryFile() as log:
        try:
            return asyncio.run(
                all_rows(work, rows, cmd, server_options(plan), log, scorer, plan.open_files)
            )
        except ServerError as exc:
            log.seek(0)
            tail = log.read().decode("utf-8", "replace")[-3000:]
            raise ServerError(f"{exc}\n--- server log (tail) ---\n{tail}") from None


def run_repo(
    plan: RepoRun, names: list[str], folders: list[Path], log: IO[str] = sys.stderr
) -> dict[str, Any]:
    """The whole report (see the module's doc)."""
    if plan.threads is not None:
        os.environ["OMP_NUM_THREADS"] = str(plan.threads)  # the server's torch threads
    judge = Judge(plan.timeout_s, cache_dir() / "pristine.json") if plan.tests else None
    scorer = Scorer(judge, log)
    work: list[tuple[PackageTree, list[RepoHole]]] = []
    for source in sources(names, folders, log, plan.package_set):
        holes = mine(source, plan.holes, plan.seed, plan.cut)
        scorer.add_source(source, registry=not folders)
        print(
            f"{source.label}: {len(holes)} holes, tests {scorer.runnable[source.label]}", file=log
        )
        work.append((source, holes))
    shown: list[str] = []
    interrupted = False
    try:  # a run cut short (Ctrl-C, SIGTERM) reports the answers it has
        shown = _server_rows(plan, work, scorer) if [r for r in plan.rows if r in ROWS] else []
        _llama(plan, work, scorer, log)
    except KeyboardInterrupt:
        interrupted = True
        print("interrupted: the report holds the answers so far", file=log)
    every = [h for _, holes in work for h in holes]
    return {
        "preset": plan.preset,
        "plan": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(plan).items()},
        "packages": [_package(s, holes, scorer) for s, holes in work],
        "holes": [asdict(h) for h in every],
        "interrupted": interrupted,
        "rows": {row: summarize(scores) for row, scores in scorer.scores.items()},
        "rows_on_common_holes": common(scorer.scores),
        "per_package": _per_package(scorer, work),
        "test_runs": 0 if judge is None else judge.runs,
        "server_messages": shown,
        "answers": {row: [asdict(s) for s in scores] for row, scores in scorer.scores.items()},
    }


def common(scores: dict[str, list[Score]]) -> dict[str, Any]:
    """Each row's figures on the holes that every row answered (all of them unless a row was
    cut short or failed part of the way)."""
    answered = [{s.hole for s in row} for row in scores.values()]
    shared = set.intersection(*answered) if answered else set()
    return {row: summarize([s for s in mine if s.hole in shared]) for row, mine in scores.items()}


def _llama(
    plan: RepoRun, work: list[tuple[PackageTree, list[RepoHole]]], scorer: Scorer, log: IO[str]
) -> None:
    if plan.llama_server != "auto" or LLAMA_ROW not in plan.rows:
        return
    if plan.gguf is None:
        print("llama-server: skipped (no GGUF given; pass --gguf PATH)", file=log)
        return
    from spec_lsp.benchmarks.repo_llama import llama_rows

    threads = plan.threads or os.cpu_count() or 1
    llama_rows(work, plan.gguf, threads, plan.max_tokens, plan.open_files, scorer, log)


def _package(source: PackageTree, holes: list[RepoHole], scorer: Scorer) -> dict[str, Any]:
    return {
        "label": source.label,
        "license": source.license,
        "files": len(source.code),
        "holes": len(holes),
        "tests_run": scorer.runnable[source.label],
    }


def _per_package(scorer: Scorer, work: list[tuple[PackageTree, list[RepoHole]]]) -> dict[str, Any]:
    return per_package(scorer.scores, [source.label for source, _ in work])


def per_package(scores: dict[str, list[Score]], labels: list[str]) -> dict[str, Any]:
    """Exact match per package (by label) and row; a row that answered none of a package's
    holes (a part of a merged run) is left out of that package's."""
    out: dict[str, Any] = {}
    for label in labels:
        figures = {}
        for row, answered in scores.items():
            theirs = [s for s in answered if s.hole.startswith(label + "/")]
            if theirs:
                figures[row] = summarize(theirs)["exact_match"]
        out[label] = figures
    return out


COLUMNS = (  # title, figure, format
    ("exact", "exact_match", "{:.1%}"),
    ("edit sim", "edit_similarity", "{:.3f}"),
    ("ident", "identifier_match", "{:.3f}"),
    ("pass@1", "pass_at_1", "{:.1%}"),
    ("tested", "with_tests", "{}"),
    ("holes", "holes", "{}"),
    ("empty", "empty", "{}"),
    ("p50 ms", "latency_p50_ms", "{:.0f}"),
)


def _lines(rows: dict[str, Any]) -> list[str]:
    lines = [f"{'row':<20}" + "".join(f"{title:>10}" for title, _, _ in COLUMNS)]
    for row, figures in rows.items():
        cells = [
            "-" if figures[key] is None else fmt.format(figures[key]) for _, key, fmt in COLUMNS
        ]
        lines.append(f"{row:<20}" + "".join(f"{c:>10}" for c in cells))
    return lines


def table(report: dict[str, Any]) -> str:
    plan = report["plan"]
    lines = [
        f"repo: {sum(p['holes'] for p in report['packages'])} holes from "
        f"{len(report['packages'])} packages ({report['preset']}, maxTokens {plan['max_tokens']}, "
        f"{plan['open_files']} open files, seed {plan['seed']}"
        + (", holes cut after the call's `(`" if plan.get("cut", "name") == "args" else "")
        + ")"
        + (" - interrupted" if report["interrupted"] else ""),
        *_lines(report["rows"]),
    ]
    shared = report["rows_on_common_holes"]
    if any(shared[row]["holes"] != report["rows"][row]["holes"] for row in shared):
        n = next(iter(shared.values()))["holes"]
        lines += [f"on the {n} holes every row answered:", *_lines(shared)]
    return "\n".join(lines)


def main(plan: RepoRun, names: list[str], folders: list[Path], json_path: str | None) -> int:
    """Runs the bench, prints its table, writes the JSON report when asked; 1 on an error that
    stops it (what went wrong, on stderr)."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a kill ends it as Ctrl-C does
    try:
        report = run_repo(plan, names, folders)
    except (PackageError, ServerError, ValueError) as exc:
        print(f"spec-lsp bench repo: {exc}", file=sys.stderr)
        return 1
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(table(report))
    return 0
