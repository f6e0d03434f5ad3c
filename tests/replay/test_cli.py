"""`spec-lsp record` / `spec-lsp replay` argument handling: bad input is one message, exit 2."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from spec_lsp.commands.replay import main


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["record", "--out", "x.jsonl"], "give the server command after --"),
        (["replay", "synthesize", "a.py"], "usage: spec-lsp replay synthesize"),
        (["replay", "s.jsonl", "--out", "d"], "--out is for `replay synthesize`"),
        (["replay", "missing.jsonl"], "missing.jsonl"),
        (["replay", "BAD", "--init-options", "[1]"], "line 2: not JSON"),
    ],
)
def test_bad_arguments_exit_2_with_one_message(
    argv: list[str],
    complaint: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    header = '{"format": "spec-lsp-session", "version": 1, "languageId": "c", "uri": "file:///a.c"}'
    (tmp_path / "BAD").write_text(header + "\n{oops\n")
    assert main(argv) == 2
    assert complaint in capsys.readouterr().err


def test_an_empty_folder_is_no_sessions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path)]) == 2
    assert "no sessions" in capsys.readouterr().err


def test_plot_without_matplotlib_says_which_extra_to_install_before_replaying(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """matplotlib is the optional `plot` extra: `--plot` without it fails at once, with the pip
    command, rather than after minutes of replay."""
    from spec_lsp.replay.report import PlotUnavailable, plot

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed: find_spec is None
    assert main(["replay", str(tmp_path), "--plot", str(tmp_path / "p.png")]) == 2
    assert "pip install 'spec-lsp[plot]'" in capsys.readouterr().err
    with pytest.raises(PlotUnavailable, match=r"spec-lsp\[plot\]"):
        plot(tmp_path / "p.png", [])
    assert not (tmp_path / "p.png").exists()
