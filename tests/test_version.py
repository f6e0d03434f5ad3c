"""One version for every part: the cli, doctor and the server's serverInfo read `__version__`."""

from __future__ import annotations

import importlib
from importlib import metadata

import pytest

import spec_lsp.version
from spec_lsp.cli import build_parser
from spec_lsp.server import VERSION
from spec_lsp.version import __version__, version


def test_the_server_and_the_cli_report_the_same_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--version"])
    assert __version__ == VERSION
    assert capsys.readouterr().out.split()[1] == __version__
    assert version().split()[0] == __version__


def test_a_bare_checkout_reports_the_uninstalled_version(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    try:
        bare = importlib.reload(spec_lsp.version)
        assert bare.__version__ == bare.UNINSTALLED == "0+unknown"
        assert bare.version() == "0+unknown (not installed: pip install -e .)"
    finally:
        monkeypatch.undo()
        importlib.reload(spec_lsp.version)
