"""tools/check_sizes.py, the size rule in `make lint`: it flags what is too long, unless a reason
is written at the top, and passes what is within the limits."""

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


def test_an_oversized_module_without_a_reason_is_flagged(sizes: ModuleType) -> None:
    assert found(sizes, module(351)) == ["module"]


def test_a_module_at_the_limit_passes(sizes: ModuleType) -> None:
    assert found(sizes, module(350)) == []


def test_a_size_reason_in_the_module_docstring_lets_it_pass(sizes: ModuleType) -> None:
    doc = "A module.\n\nSize: one table of cases that reads best in one place.\n"
    assert found(sizes, module(400, doc)) == []


def test_the_marker_without_a_reason_does_not_count(sizes: ModuleType) -> None:
    assert found(sizes, module(400, "A module.\n\nSize:\n")) == ["module"]


def test_an_oversized_function_is_flagged_and_one_at_the_limit_passes(sizes: ModuleType) -> None:
    source = function("too_long", 61) + "\n\n" + function("just_right", 59)
    assert found(sizes, source) == ["function too_long"]


def test_methods_and_async_functions_are_measured_too(sizes: ModuleType) -> None:
    method = "class C:\n" + "".join("    " + line + "\n" for line in function("m", 70).splitlines())
    async_fn = "async " + function("a", 70)
    assert found(sizes, method + "\n" + async_fn) == ["function m", "function a"]


def test_a_size_reason_in_a_function_docstring_lets_it_pass(sizes: ModuleType) -> None:
    doc = (
        "Does one thing.\n\n    Size: the algorithm's steps are easier to check side by side.\n    "
    )
    assert found(sizes, function("long_but_why", 80, doc)) == []


def test_the_command_fails_on_an_oversized_file_and_passes_a_clean_tree(
    sizes: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "small.py").write_text(function("f", 10))
    assert sizes.main([str(tmp_path)]) == 0
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "big.py").write_text(function("huge", 100))
    assert sizes.main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "big.py:1: function huge has 101 lines (limit 60)" in out
