"""`spec-lsp distill` end to end on the tiny target: files written, report figures, user errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spec_lsp.cli import main

from .conftest import TARGET

ARGS = [
    "--arch",
    "decoder",
    "--layers",
    "1",
    "--draft-vocab",
    "1024",
    "--seq-len",
    "32",
    "--batch",
    "2",
    "--teacher-rows",
    "1",
]


def test_distill_command_writes_a_loadable_draft_and_a_report(
    corpus: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "draft"
    rc = main(
        [
            "distill",
            "--target",
            TARGET,
            "--corpus",
            *corpus,
            "--out",
            str(out),
            "--steps",
            "2",
            *ARGS,
        ]
    )
    assert rc == 0
    for name in (
        "config.json",
        "model.safetensors",
        "checkpoint.pt",
        "report.json",
    ):
        assert (out / name).is_file(), name
    summary = json.loads((out / "report.json").read_text())["summary"]
    assert summary["identical_outputs"] is True
    assert summary["steps"] == 2
    assert 0.0 <= summary["heldout_agreement"] <= 1.0
    assert summary["c"] > 0 and summary["expected_speedup"] > 0


def test_distill_command_reports_a_missing_corpus_as_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope"
    rc = main(
        [
            "distill",
            "--target",
            TARGET,
            "--corpus",
            str(missing),
            "--out",
            str(tmp_path / "o"),
            *ARGS,
        ]
    )
    assert rc == 1
    assert f"corpus path {missing} does not exist" in capsys.readouterr().err
