"""`bench blocks`: the multi-line set built offline (HumanEval widened to its enclosing block,
standard library blocks judged by their own tests) and the bench's plumbing on the tiny preset
(gibberish: only the rows, caps and figures are checked, never a quality)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from spec_lsp.benchmarks import blocks_holes
from spec_lsp.benchmarks.blocks import failures, row
from spec_lsp.benchmarks.blocks_holes import Hole, humaneval_holes, widen_to_block
from spec_lsp.benchmarks.fim_problems import read_problems
from spec_lsp.cli import main

MINI = Path(__file__).parent / "data" / "fim-mini.jsonl"


def _hole(problem: dict[str, str]) -> Hole:
    solution = problem["canonical_solution"]
    return Hole("t", "humaneval", problem["prompt"], problem["suffix"], solution, problem=problem)


def test_a_hole_widened_to_its_block_takes_the_rest_of_the_block_and_passes_its_tests() -> None:
    loop = next(p for p in read_problems(MINI) if p["task_id"] == "FimMini/1/L2")
    grown = widen_to_block(loop)
    assert grown is not None
    assert grown["canonical_solution"] == "    for x in xs:\n        s += x\n    return s\n"
    hole = _hole(grown)
    assert hole.judge(hole.solution.rstrip(), 10).passed
    assert not hole.judge("    pass", 10).passed


def test_a_hole_at_its_blocks_end_cannot_grow() -> None:
    last = next(p for p in read_problems(MINI) if p["task_id"] == "FimMini/0/L1")
    assert widen_to_block(last) is None


def test_humaneval_holes_keep_one_multi_line_hole_per_task() -> None:
    holes = humaneval_holes(MINI, 100)
    tasks = [h.name.rsplit("/L", 1)[0] for h in holes]
    assert len(tasks) == len(set(tasks)) and holes
    assert all(2 <= h.solution.count("\n") <= blocks_holes.HUMANEVAL_LINES for h in holes)


def test_a_standard_library_hole_is_judged_by_the_modules_own_tests() -> None:
    holes = blocks_holes.stdlib_candidates("colorsys", 6)
    assert holes and all(h.module == "colorsys" for h in holes)
    noticed = [h for h in holes if blocks_holes.noticed(h, 30)]
    assert noticed, "colorsys's tests notice none of its blocks replaced by `pass`"
    hole = noticed[0]
    assert (
        hole.filled(hole.solution.rstrip()) + "\n"
        == hole.prompt + hole.solution + "\n" + (hole.suffix)
        or hole.judge(hole.solution.rstrip(), 30).passed
    )
    assert hole.judge(hole.solution.rstrip(), 30).passed


def test_failures_say_which_answers_were_short_capped_or_ended_on_a_header() -> None:
    problem = next(p for p in read_problems(MINI) if p["task_id"] == "FimMini/1/L2")
    grown = widen_to_block(problem)
    assert grown is not None
    hole = _hole(grown)
    header = row(hole, "    for x in xs:", 64, 1.0, 10)
    whole = row(hole, hole.solution.rstrip(), 12, 1.0, 10)
    assert not header.passed and whole.passed
    counts = failures([header, whole], [hole], cap=64)
    assert counts == {"failed": 1, "shorter_than_hole": 1, "at_cap": 1, "ends_on_header": 1}


def test_bench_blocks_asks_each_hole_before_and_after_with_their_caps(tmp_path: Path) -> None:
    data = tmp_path / "mini.jsonl.gz"
    data.write_bytes(gzip.compress(MINI.read_bytes()))
    out = tmp_path / "blocks.json"
    argv = ["bench", "blocks", "--data", str(data), "--preset", "tiny", "--device", "cpu"]
    argv += ["--stdlib", "0", "--max-tokens", "4", "--block-tokens", "8"]
    argv += ["--llama-server", "off", "--json", str(out)]
    assert main(argv) == 0
    report = json.loads(out.read_text())
    names = [h["name"] for h in report["holes"]]
    assert set(report["rows"]) == {"before", "after"}
    for mode, cap in (("before", 4), ("after", 8)):
        rows = report["rows"][mode]
        assert [r["task_id"] for r in rows] == names
        assert all(0 < r["tokens"] <= cap for r in rows)
    assert set(report["sets"]) == {"humaneval", "all"}
