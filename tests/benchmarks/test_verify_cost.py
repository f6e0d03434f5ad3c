"""`spec-lsp bench verify-cost` prints the target's pass-cost curve and writes it as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spec_lsp.benchmarks.verify_cost import curve_table, main


def test_the_table_gives_each_rows_ratio_to_one_row() -> None:
    lines = curve_table({200: (10.0, 12.5, 20.0)})
    assert lines[0] == "| rows | 1 | 2 | 3 | 1 row ms |"
    assert lines[2] == "| after 200 tokens | 1.00 | 1.25 | 2.00 | 10.0 |"


def test_the_bundled_targets_curve_is_measured_and_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "curve.json"
    assert main("bundled", "cpu", 3, [16], 1, str(out)) == 0
    report = json.loads(out.read_text())
    assert len(report["ms"]["16"]) == 3 and report["ratio"]["16"][0] == 1.0
    assert all(ms > 0 for ms in report["ms"]["16"]) and report["kernels"]
    assert "| after 16 tokens | 1.00 |" in capsys.readouterr().out


def test_a_cpu_time_curve_runs_one_thread_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    threads = torch.get_num_threads()
    out = tmp_path / "curve.json"
    assert main("tiny", "cpu", 2, [16], 1, str(out), cpu_time=True) == 0
    report = json.loads(out.read_text())
    assert report["timing"] == "one thread, CPU time" and all(ms > 0 for ms in report["ms"]["16"])
    assert "one thread, CPU time" in capsys.readouterr().out
    assert torch.get_num_threads() == threads  # given back to the process
