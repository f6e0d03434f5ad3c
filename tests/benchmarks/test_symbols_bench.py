"""`python -m spec_lsp.benchmarks.symbols PATH` prints its figures for a folder (no timed
assert: the figures are counts and whatever the clock said)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spec_lsp.benchmarks.symbols import main


def test_the_index_bench_counts_files_lines_and_tags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.py").write_text("class A:\n    def f(self):\n        pass\n")
    (tmp_path / "b.py").write_text("def g():\n    pass\n")
    main([str(tmp_path), "--updates", "2"])
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (figures["files"], figures["lines"], figures["tags"]) == (2, 5, 3)
    assert figures["largestFileLines"] == 4
