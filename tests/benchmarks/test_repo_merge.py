"""`bench repo --merge`: parts of one bench (other packages, another row) put together as one
run's report, every figure recomputed from the answers."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from spec_lsp.benchmarks.repo_merge import MergeError, merge
from spec_lsp.benchmarks.repo_score import score, summarize
from spec_lsp.cli import main

PLAN = {"preset": "coder", "seed": 0, "max_tokens": 64, "open_files": 8, "holes": 2}


def part(answers: dict[str, dict[str, str]], expected: dict[str, str], **plan: Any) -> dict:
    """A report whose rows answered `answers[row][hole]` at holes `expected[hole]`."""
    labels = sorted({hole.split("/")[0] for hole in expected})
    return {
        "preset": "coder",
        "plan": PLAN | plan,
        "packages": [
            {"label": label, "license": "MIT", "files": 3, "holes": 2, "tests_run": False}
            for label in labels
        ],
        "holes": [
            {
                "package": h.split("/")[0],
                "path": h.split("/")[1].split(":")[0],
                "start": int(h.split(":")[1]),
                "expected": want,
            }
            for h, want in expected.items()
        ],
        "interrupted": False,
        "answers": {
            row: [asdict(score(h, a, expected[h], None, 100.0)) for h, a in by_hole.items()]
            for row, by_hole in answers.items()
        },
    }


A = {"a-1/x.py:1": "f(x)", "a-1/x.py:9": "g(y)"}
B = {"b-2/y.py:4": "h(z)", "b-2/y.py:7": "k()"}


def test_parts_of_other_packages_and_a_row_run_apart_merge_as_one_run() -> None:
    first = part({"in_file": {"a-1/x.py:1": "f(x)", "a-1/x.py:9": "g(q)"}}, A)
    second = part({"in_file": {"b-2/y.py:4": "h(z)", "b-2/y.py:7": "k()"}}, B)
    llama = part({"llama_server_ring": {"a-1/x.py:1": "f(x)"}}, A, holes=1)
    merged = merge([("first", first), ("second", second), ("llama", llama)])
    assert [p["label"] for p in merged["packages"]] == ["a-1", "b-2"]
    assert len(merged["holes"]) == 4
    assert merged["rows"]["in_file"]["holes"] == 4 and merged["rows"]["in_file"]["exact"] == 3
    assert merged["rows"]["llama_server_ring"]["exact"] == 1
    # compared where both rows answered: the one hole llama-server was asked
    shared = merged["rows_on_common_holes"]
    assert shared["in_file"]["holes"] == shared["llama_server_ring"]["holes"] == 1
    assert merged["per_package"]["b-2"]["in_file"] == 1.0
    assert merged["per_package"]["a-1"]["in_file"] == 0.5
    # llama-server was asked none of b-2's holes: no figure there, not 0%
    assert "llama_server_ring" not in merged["per_package"]["b-2"]
    assert [p["file"] for p in merged["parts"]] == ["first", "second", "llama"]
    assert merged["duplicates"] == []
    said = {"a-1/x.py:1": "f(x)", "a-1/x.py:9": "g(q)", **B}
    assert merged["rows"]["in_file"] == summarize(
        [score(h, a, {**A, **B}[h], None, 100.0) for h, a in said.items()]
    )


def test_a_hole_answered_twice_keeps_the_first_answer_and_says_so() -> None:
    first = part({"ring": {"a-1/x.py:1": "f(x)"}}, A)
    again = part({"ring": {"a-1/x.py:1": "nope"}}, A)
    merged = merge([("first", first), ("again", again)])
    assert merged["rows"]["ring"]["exact"] == 1 and merged["rows"]["ring"]["holes"] == 1
    assert merged["duplicates"] == ["ring a-1/x.py:1"]


@pytest.mark.parametrize(
    "key, value",
    [
        ("seed", 1),
        ("max_tokens", 32),
        ("preset", "bundled"),
        ("package_set", "npm"),
        ("cut", "args"),
    ],
)
def test_parts_of_different_benches_are_refused(key: str, value: Any) -> None:
    first = part({"ring": {"a-1/x.py:1": "f(x)"}}, A)
    other = part({"ring": {"b-2/y.py:4": "h(z)"}}, B, **{key: value})
    with pytest.raises(MergeError, match=key):
        merge([("first", first), ("other", other)])


def test_the_command_writes_the_merged_report_and_names_a_bad_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.write_text(json.dumps(part({"in_file": {"a-1/x.py:1": "f(x)"}}, A)))
    two.write_text(json.dumps(part({"in_file": {"b-2/y.py:4": "nope"}}, B)))
    out = tmp_path / "merged.json"
    assert main(["bench", "repo", "--merge", str(one), str(two), "--json", str(out)]) == 0
    assert "4 holes from 2 packages" in capsys.readouterr().out
    assert json.loads(out.read_text())["rows"]["in_file"]["exact"] == 1
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["bench", "repo", "--merge", str(one), str(bad)]) == 1
    assert "bad.json: not a `bench repo` report" in capsys.readouterr().err
