"""The case suite: realistic editor situations in many languages (tests/syntax/cases/*.json), each
with the text around the cursor, what a model wrote there, the suggestion that should be shown
(null: nothing) and why. A third or more of them are right unchanged: trimming keeps what the
model wrote unless a named rule says otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spec_lsp.syntax import SyntaxService, cutter_for

CASES_DIR = Path(__file__).parent / "cases"


def load_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for path in sorted(CASES_DIR.glob("*.json")):
        cases.extend(json.loads(path.read_text(encoding="utf-8")))
    return cases


CASES = load_cases()


def unchanged(case: dict[str, Any]) -> bool:
    return bool(case["expected"] == case["completion"].rstrip())


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case_gets_the_expected_suggestion(case: dict[str, Any]) -> None:
    cutter = cutter_for(case["languageId"], case["prefix"], case["suffix"])
    assert cutter.trim(case["completion"]) == case["expected"], case["why"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_stopping_at_the_callback_gives_the_same_suggestion(case: dict[str, Any]) -> None:
    cutter = cutter_for(case["languageId"], case["prefix"], case["suffix"])
    completion = case["completion"]
    for end in range(1, len(completion) + 1):  # one character per decode step
        keep = cutter.stop(completion[:end])
        if keep is not None:
            assert cutter.trim(completion[:end][:keep]) == case["expected"]
            return


def test_the_service_gives_the_same_suggestions_from_open_documents() -> None:
    svc = SyntaxService()
    for case in CASES:
        prefix = case["prefix"]
        uri = "file:///cases/" + case["id"]
        svc.open(uri, case["languageId"], prefix + case["suffix"])
        row, col = prefix.count("\n"), len(prefix) - (prefix.rfind("\n") + 1)
        assert svc.cutter(uri, row, col).trim(case["completion"]) == case["expected"], case["id"]


def test_the_suite_is_broad_and_mostly_keeps_the_completion() -> None:
    assert len(CASES) >= 100
    assert len({c["languageId"] for c in CASES}) >= 20
    assert sum(unchanged(c) for c in CASES) * 3 >= len(CASES)
    assert len({c["id"] for c in CASES}) == len(CASES)
    assert all(c["why"] for c in CASES)
