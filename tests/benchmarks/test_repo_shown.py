"""`python -m spec_lsp.benchmarks.repo_shown`: at each of `bench repo`'s holes, whether the
definitions context the server would freeze there shows the hole's first name, counted on
synthetic packages written by the test (tests/benchmarks/repo_fixture.py). No model, no network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spec_lsp.benchmarks import repo_shown
from spec_lsp.benchmarks.repo_holes import mine
from spec_lsp.benchmarks.repo_packages import local
from tests.benchmarks.repo_fixture import write_package


def helpers_package(folder: Path) -> Path:
    """Two holes at `helper`: `y = helper(x)`, where the function has not used it yet, and
    `return helper(y)`, where the line above has."""
    root = folder / "helpers-1.0"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "a.py").write_text("def helper(x):\n    'Doubles x.'\n    return 2 * x\n")
    body = "from pkg.a import helper\n\n\ndef f(x):\n    y = helper(x)\n    return helper(y)\n"
    (root / "pkg" / "b.py").write_text(body)
    return root


def test_a_holes_name_is_shown_where_the_code_above_it_used_it(tmp_path: Path) -> None:
    root = helpers_package(tmp_path)
    holes = mine(local(root), 10)
    counts = repo_shown.tally([root], {root: holes}, budget=3000)["helpers-1.0"]
    assert sorted(h.expected for h in holes) == ["helper(x)", "helper(y)"]
    assert (counts.holes, counts.resolved, counts.named, counts.wanted) == (2, 2, 1, 1)
    shown = dict(zip((h.expected for h in holes), counts.names, strict=True))
    assert shown == {"helper(y)": ["helper"], "helper(x)": []}


def test_names_resolve_through_an_alias_and_a_module_has_no_definition(tmp_path: Path) -> None:
    """The fixture's six holes: Box, surface (`area as surface`) twice and perimeter resolve to
    definitions in shapes.py, `units` is a module; each hole starts at its name, which the lines
    above it in its function never use, so none is shown, while names used above are."""
    root = write_package(tmp_path)
    counts = repo_shown.tally([root], {root: mine(local(root), 10)}, budget=3000)["mathy-1.0"]
    assert (counts.holes, counts.resolved, counts.named, counts.wanted) == (6, 4, 0, 0)
    assert counts.shown == 4 and ["perimeter", "Box", "area"] in counts.names


def test_a_budget_too_small_for_any_definition_shows_none(tmp_path: Path) -> None:
    root = helpers_package(tmp_path)
    counts = repo_shown.tally([root], {root: mine(local(root), 10)}, budget=10)["helpers-1.0"]
    assert (counts.shown, counts.named, counts.wanted) == (0, 0, 1)


def test_the_command_prints_and_writes_the_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = helpers_package(tmp_path)
    out = tmp_path / "shown.json"
    assert repo_shown.main(["--preset", "bundled", "--folder", str(root), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert (
        "all: 2 holes, a definition shown at 1; the hole's name has one at 2, shown at 1" in printed
    )
    report = json.loads(out.read_text())
    assert report["packages"]["helpers-1.0"]["named"] == 1 and report["budget"] > 0
