"""HumanEval-style infilling problems for `bench fim`: read from JSON lines (plain or gzipped),
checked for the keys the bench needs, and grown into multi-line holes (`widen`).

Knows nothing of models, the completion service or how a hole is judged (`fim_exec`).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

Problem = dict[str, str]
KEYS = ("task_id", "prompt", "suffix", "canonical_solution", "test", "entry_point")


class FimError(Exception):
    """The bench cannot run: unreadable data, or a model that did not load."""


def read_problems(path: Path, offset: int = 0, limit: int | None = None) -> list[Problem]:
    """Problems from a .jsonl or .jsonl.gz file, `limit` of them from `offset`."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            lines = [line for line in f if line.strip()]
    except (OSError, EOFError) as exc:
        raise FimError(f"cannot read {path}: {exc}") from exc
    chosen = lines[offset:] if limit is None else lines[offset : offset + limit]
    problems = []
    for n, line in enumerate(chosen, offset + 1):
        try:
            problem = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FimError(f"{path}: problem {n} is not JSON ({exc})") from exc
        missing = [key for key in KEYS if key not in problem]
        if missing:
            raise FimError(f"{path}: problem {n} lacks {', '.join(missing)}")
        problems.append(problem)
    return problems


def widen(problem: Problem, lines: int) -> Problem:
    """The problem with its hole grown to up to `lines` lines: the suffix's next lines move into
    the canonical solution while they are code of the hole's block (not blank, indented at least
    as deep as the hole's first line). A single-line set thus yields multi-line holes whose tests
    are the problem's own; a hole that cannot grow (the block ends after it) stays as it was."""
    solution = problem["canonical_solution"]
    first = solution.splitlines()[0] if solution.strip() else ""
    depth = len(first) - len(first.lstrip())
    rest = problem["suffix"].splitlines(keepends=True)
    taken = 0
    while taken < min(lines - 1, len(rest)):
        line = rest[taken]
        if not line.strip() or len(line) - len(line.lstrip()) < depth:
            break
        taken += 1
    if not taken or not solution.endswith("\n"):
        return problem
    grown = solution + "".join(rest[:taken])
    return {**problem, "canonical_solution": grown, "suffix": "".join(rest[taken:])}
