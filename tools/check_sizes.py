"""Size rule for `make lint`: no module over 350 lines, no function over 60, without a reason.

A module or function may be longer when its docstring says why on a line that starts with the
marker `Size:` followed by the reason (e.g. `Size: the accept/reject math reads best in one
piece`). Functions are measured from `def` (decorators included) to their last line; modules by
their line count. Usage: `python tools/check_sizes.py [PATH ...]` (default: spec_lsp/); prints one
line per oversized module or function and exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_MODULE_LINES = 350
MAX_FUNCTION_LINES = 60
MARKER = "Size:"

Sized = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Oversize:
    path: Path
    line: int
    what: str  # "module" or "function NAME"
    lines: int
    limit: int

    def __str__(self) -> str:
        return (
            f"{self.path}:{self.line}: {self.what} has {self.lines} lines (limit {self.limit}); "
            f"split it, or say why in its docstring on a line starting with {MARKER!r}"
        )


def has_reason(node: Sized) -> bool:
    """True when the docstring has a line `Size: <reason>` with some reason after the marker."""
    doc = ast.get_docstring(node) or ""
    return any(
        line.strip().startswith(MARKER) and line.strip()[len(MARKER) :].strip()
        for line in doc.splitlines()
    )


def function_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return (node.end_lineno or node.lineno) - first + 1


def check_source(
    source: str,
    path: Path,
    max_module: int = MAX_MODULE_LINES,
    max_function: int = MAX_FUNCTION_LINES,
) -> Iterator[Oversize]:
    """The oversized module and functions of one file's source, without a `Size:` reason."""
    tree = ast.parse(source, filename=str(path))
    count = len(source.splitlines())
    if count > max_module and not has_reason(tree):
        yield Oversize(path, 1, "module", count, max_module)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for node in sorted(functions, key=lambda n: n.lineno):
        n = function_lines(node)
        if n > max_function and not has_reason(node):
            yield Oversize(path, node.lineno, f"function {node.name}", n, max_function)


def python_files(paths: list[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(path.rglob("*.py"))
        else:
            yield path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("paths", nargs="*", type=Path, default=[Path("spec_lsp")])
    parser.add_argument("--max-module-lines", type=int, default=MAX_MODULE_LINES)
    parser.add_argument("--max-function-lines", type=int, default=MAX_FUNCTION_LINES)
    args = parser.parse_args(argv)
    found = [
        oversize
        for path in python_files(args.paths)
        for oversize in check_source(
            path.read_text(encoding="utf-8"),
            path,
            args.max_module_lines,
            args.max_function_lines,
        )
    ]
    for oversize in found:
        print(oversize)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
