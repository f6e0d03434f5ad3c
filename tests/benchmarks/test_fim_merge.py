"""`spec-lsp bench fim --merge`: reports of consecutive slices join into the report of one run
over their union (rows in order, figures recomputed from the rows, drafting counters summed), and
parts that measured something else, overlap or leave a gap are refused with the reason."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from spec_lsp.benchmarks import fim
from spec_lsp.benchmarks.fim_exec import Row
from spec_lsp.benchmarks.fim_merge import merge
from spec_lsp.benchmarks.fim_problems import FimError
from spec_lsp.cli import main


def _row(i: int, passed: bool, ms: float) -> Row:
    return Row(
        task_id=f"t/{i}",
        passed=passed,
        outcome="passed" if passed else "failed",
        exact_first_line=passed,
        tokens=i,
        latency_ms=ms,
        multi_line=i % 3 == 0,
        hole_multi_line=False,
        completion=f"x{i}",
    )


ROWS = [_row(i, i % 4 != 1, 100.0 + 37 * (i % 7)) for i in range(10)]
LLAMA = [_row(i, i % 2 == 0, 50.0 + i) for i in range(10)]


def _report(offset: int, n: int, **changes: Any) -> dict[str, Any]:
    """What `bench fim --offset offset --limit n --json` writes for ROWS / LLAMA (no model)."""
    rows = {
        "spec_lsp": ROWS[offset : offset + n],
        "llama_server_infill": LLAMA[offset : offset + n],
    }
    drafting = {key: offset + n for key in fim.DRAFT_COUNTS}
    report = {
        "data": "he.jsonl.gz",
        "preset": "coder",
        "device": "cpu",
        "drafting": drafting,
        "offset": offset,
        "widen_to": 1,
        "max_tokens": 64,
        "timeout_s": 10.0,
        "threads": 2,
        "gguf": "a.gguf",
        "modes": {mode: fim.summarize(r) for mode, r in rows.items()},
        "rows": {mode: [asdict(x) for x in r] for mode, r in rows.items()},
    }
    return {**report, **changes}


def test_slices_merge_into_the_report_of_one_run_over_them() -> None:
    whole = _report(0, 10)
    merged = merge([_report(7, 3), _report(0, 4), _report(4, 3)])  # in any order
    assert merged["rows"] == whole["rows"]
    assert merged["modes"] == whole["modes"]  # pass@1, percentiles: from the rows, not averaged
    assert merged["offset"] == 0 and merged["merged_parts"] == 3
    assert merged["drafting"]["generated_tokens"] == 4 + 7 + 10
    assert fim.table(merged) == fim.table(whole)


@pytest.mark.parametrize(
    ("parts", "reason"),
    [
        ([_report(0, 4), _report(5, 5)], "not consecutive"),
        ([_report(0, 5), _report(4, 6)], "not consecutive"),
        ([_report(0, 5), _report(5, 5, max_tokens=32)], "max_tokens"),
        ([_report(0, 5), _report(5, 5, gguf="b.gguf")], "gguf"),
        ([_report(0, 5), _report(5, 5, preset="small")], "preset"),
        ([], "no reports"),
    ],
)
def test_parts_that_do_not_make_one_run_are_refused(
    parts: list[dict[str, Any]], reason: str
) -> None:
    with pytest.raises(FimError, match=reason):
        merge(parts)


def test_the_cli_merges_parts_into_a_json_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = []
    for offset, n in ((0, 6), (6, 4)):
        path = tmp_path / f"part-{offset}.json"
        path.write_text(json.dumps(_report(offset, n)), encoding="utf-8")
        paths.append(str(path))
    out = tmp_path / "all.json"
    assert main(["bench", "fim", "--merge", *paths, "--json", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["rows"] == _report(0, 10)["rows"]
    assert "spec_lsp" in capsys.readouterr().out
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    assert main(["bench", "fim", "--merge", str(tmp_path / "bad.json")]) == 1
    assert "not a readable bench fim report" in capsys.readouterr().err
    assert main(["bench", "fim"]) == 2  # neither --data nor --merge
