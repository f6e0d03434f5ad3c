"""`python -m spec_lsp.benchmarks.repo_shown`: at each of `bench repo`'s holes, whether the
definitions context the server would freeze there shows the hole's first name, counted on the
synthetic package (tests/benchmarks/repo_fixture.py). No model, no network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spec_lsp.benchmarks import repo_shown
from spec_lsp.benchmarks.repo_holes import mine
from spec_lsp.benchmarks.repo_packages import local
from tests.benchmarks.repo_fixture import write_package


def test_every_hole_of_a_resolvable_name_shows_its_definition_with_room(tmp_path: Path) -> None:
    root = write_package(tmp_path)
    holes = mine(local(root), 10)
    counts = repo_shown.tally([root], {root: holes}, budget=3000)["mathy-1.0"]
    assert counts.holes == len(holes) == 6
    # Box, surface (`area as surface`: through the alias) and perimeter have a definition in
    # shapes.py; `units` is a module, which has none.
    assert counts.resolved == counts.named == counts.wanted == 4
    assert counts.shown == 6  # the units holes show the file's other imports
    assert all("area" in names for names in counts.names)  # imported, used or not


def test_a_budget_too_small_for_any_definition_shows_none(tmp_path: Path) -> None:
    root = write_package(tmp_path)
    counts = repo_shown.tally([root], {root: mine(local(root), 10)}, budget=10)["mathy-1.0"]
    assert (counts.shown, counts.named, counts.wanted) == (0, 0, 4)


def test_the_command_prints_and_writes_the_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_package(tmp_path)
    out = tmp_path / "shown.json"
    assert repo_shown.main(["--preset", "bundled", "--folder", str(root), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "all: 6 holes" in printed and "shown at 4" in printed
    report = json.loads(out.read_text())
    assert report["packages"]["mathy-1.0"]["named"] == 4 and report["budget"] > 0
