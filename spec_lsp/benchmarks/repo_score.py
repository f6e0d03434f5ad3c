"""Scores of `bench repo`: one answer against a hole's expected text, and a row's figures.

- the answer compared is the suggestion cut to as many lines as the expected text has (a
  suggestion that goes on past the statement is judged on the statement, as CrossCodeEval cuts a
  prediction to its first line); `longer` says that it went on;
- exact match: the two equal, trailing spaces of each line and the ends' blank space ignored;
- edit similarity: difflib's `SequenceMatcher(autojunk=False).ratio()` of the two, character
  level (CrossCodeEval's edit similarity is the same ratio, by rapidfuzz);
- identifier match: the share of the expected text's identifiers (keywords aside) that the answer
  has; `all_identifiers` when it has every one;
- pass@1, where the package's tests run: the whole suggestion inserted as the editor inserts it,
  the package's tests pass (`repo_tests`); None where they do not run.

`summarize` turns a row's per-hole scores into its figures. It knows nothing of servers.
"""

from __future__ import annotations

import difflib
import keyword
import re
from dataclasses import dataclass
from typing import Any

from spec_lsp.stats import percentile

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Score:
    hole: str  # RepoHole.key
    answer: str  # the whole suggestion, as inserted
    exact: bool
    similarity: float
    identifiers: float
    all_identifiers: bool
    longer: bool
    passed: bool | None  # None: the package's tests do not run here
    latency_ms: float


def cut(answer: str, expected: str) -> str:
    """The answer's first lines, as many as the expected text has."""
    return "\n".join(answer.split("\n")[: expected.count("\n") + 1])


def normal(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().split("\n"))


def identifiers(text: str) -> list[str]:
    return [name for name in IDENTIFIER.findall(text) if not keyword.iskeyword(name)]


def identifier_match(answer: str, expected: str) -> float:
    """The share of `expected`'s identifiers (each counted once) that `answer` has."""
    want = set(identifiers(expected))
    return len(want & set(identifiers(answer))) / len(want) if want else 1.0


def similarity(answer: str, expected: str) -> float:
    return difflib.SequenceMatcher(None, answer, expected, autojunk=False).ratio()


def score(
    key: str, answer: str, expected: str, passed: bool | None, latency_ms: float = 0.0
) -> Score:
    mine = cut(answer, expected)
    ids = identifier_match(mine, expected)
    return Score(
        hole=key,
        answer=answer,
        exact=normal(mine) == normal(expected),
        similarity=round(similarity(normal(mine), normal(expected)), 4),
        identifiers=round(ids, 4),
        all_identifiers=ids == 1.0,
        longer=len(answer.rstrip().split("\n")) > expected.count("\n") + 1,
        passed=passed,
        latency_ms=round(latency_ms, 1),
    )


def summarize(scores: list[Score]) -> dict[str, Any]:
    """A row's figures from its scores: means over all holes, pass@1 over those with tests."""
    n = len(scores)
    tested = [s for s in scores if s.passed is not None]
    latencies = sorted(s.latency_ms for s in scores)

    def mean(values: list[float]) -> float:
        return round(sum(values) / len(values), 4) if values else 0.0

    return {
        "holes": n,
        "exact_match": mean([float(s.exact) for s in scores]),
        "exact": sum(s.exact for s in scores),
        "edit_similarity": mean([s.similarity for s in scores]),
        "identifier_match": mean([s.identifiers for s in scores]),
        "all_identifiers": mean([float(s.all_identifiers) for s in scores]),
        "with_tests": len(tested),
        "pass_at_1": mean([float(bool(s.passed)) for s in tested]) if tested else None,
        "passed": sum(bool(s.passed) for s in tested),
        "empty": sum(not s.answer.strip() for s in scores),
        "longer": sum(s.longer for s in scores),
        "latency_p50_ms": round(percentile(latencies, 50), 1) if latencies else 0.0,
        "latency_p90_ms": round(percentile(latencies, 90), 1) if latencies else 0.0,
    }
