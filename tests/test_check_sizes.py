"""tools/check_sizes.py, the size rule in `make lint`: it counts code lines (not blanks, comments
or docstrings), flags what is too long, with no exception, and passes what is within the limits."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "check_sizes.py"


@pytest.fixture(scope="module")
def sizes() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_sizes", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def function(name: str, body_lines: int, doc: str = "") -> str:
    """A function of exactly `body_lines + 1` lines (its `def` and the body)."""
    body = [f'    """{doc}"""'] if doc else []
    body += [f"    x{i} = {i}" for i in range(body_lines - len(body))]
    return "\n".join([f"def {name}() -> None:"] + body) + "\n"


def module(lines: int, doc: str = "A module.") -> str:
    head = f'"""{doc}"""\n'
    return head + "".join(f"x{i} = {i}\n" for i in range(lines - head.count("\n")))


def found(sizes: ModuleType, source: str) -> list[str]:
    return [o.what for o in sizes.check_source(source, Path("synthetic.py"))]


def test_an_oversized_module_is_flagged(sizes: ModuleType) -> None:
    assert found(sizes, module(352)) == ["module"]  # its docstring and 351 code lines


def test_a_module_at_the_limit_passes(sizes: ModuleType) -> None:
    assert found(sizes, module(351)) == []


def test_a_reason_in_the_docstring_no_longer_lets_a_module_pass(sizes: ModuleType) -> None:
    doc = "A module.\n\nSize: one table of cases that reads best in one place.\n"
    assert found(sizes, module(400, doc)) == ["module"]


def test_blanks_comments_and_docstrings_do_not_count(sizes: ModuleType) -> None:
    long_doc = "A module.\n" + "More about it.\n" * 100
    source = module(340, long_doc) + "\n" * 50 + "# a comment\n" * 50
    assert found(sizes, source) == []
    body = '    """Does one thing.\n\n' + "    Explained at length.\n" * 30 + '    """\n'
    body += "".join(f"    x{i} = {i}  # why\n\n    # more\n" for i in range(55))
    assert found(sizes, "def f() -> None:\n" + body) == []


def test_a_string_that_is_no_docstring_counts_every_line(sizes: ModuleType) -> None:
    table = 'TABLE = """\n' + "row\n" * 360 + '"""\n'
    assert found(sizes, module(1) + table) == ["module"]


def test_an_oversized_function_is_flagged_and_one_at_the_limit_passes(sizes: ModuleType) -> None:
    source = function("too_long", 61) + "\n\n" + function("just_right", 59)
    assert found(sizes, source) == ["function too_long"]


def test_methods_and_async_functions_are_measured_too(sizes: ModuleType) -> None:
    method = "class C:\n" + "".join("    " + line + "\n" for line in function("m", 70).splitlines())
    async_fn = "async " + function("a", 70)
    assert found(sizes, method + "\n" + async_fn) == ["function m", "function a"]


def test_the_command_fails_on_an_oversized_file_and_passes_a_clean_tree(
    sizes: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "small.py").write_text(function("f", 10))
    assert sizes.main([str(tmp_path)]) == 0
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "big.py").write_text(function("huge", 100))
    assert sizes.main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "big.py:1: function huge has 101 code lines (limit 60)" in out
