"""Size rule for `make lint`: no module over 350 code lines, no function over 60.

Code lines are the lines that hold code: blank lines, comments and docstrings do not count, so a
module is not squeezed (statements joined, comments cut) to fit, and a long explanation costs
nothing. There is no exception: a module or function over the limit is split where a real noun
lives. Functions are measured from `def` (decorators included) to their last line. Usage:
`python tools/check_sizes.py [PATH ...]` (default: spec_lsp/); prints one line per oversized module
or function and exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import ast
import io
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_MODULE_LINES = 350
MAX_FUNCTION_LINES = 60

Scope = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


@dataclass(frozen=True)
class Oversize:
    path: Path
    line: int
    what: str  # "module" or "function NAME"
    lines: int
    limit: int

    def __str__(self) -> str:
        return (
            f"{self.path}:{self.line}: {self.what} has {self.lines} code lines (limit "
            f"{self.limit}); split it where a real noun lives"
        )


def docstring_lines(tree: ast.Module) -> set[int]:
    """The lines of every module, class and function docstring."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, Scope) or not node.body:
            continue
        first = node.body[0]
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def code_lines(source: str, tree: ast.Module) -> set[int]:
    """The numbers of the lines that hold a code token (a string spanning lines counts each)."""
    docs = docstring_lines(tree)
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in NOT_CODE:
            continue
        span = range(token.start[0], token.end[0] + 1)
        lines.update(n for n in span if n not in docs)
    return lines


def function_span(node: ast.FunctionDef | ast.AsyncFunctionDef) -> range:
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return range(first, (node.end_lineno or node.lineno) + 1)


def check_source(
    source: str,
    path: Path,
    max_module: int = MAX_MODULE_LINES,
    max_function: int = MAX_FUNCTION_LINES,
) -> Iterator[Oversize]:
    """The oversized module and functions of one file's source, counted in code lines."""
    tree = ast.parse(source, filename=str(path))
    code = code_lines(source, tree)
    if len(code) > max_module:
        yield Oversize(path, 1, "module", len(code), max_module)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for node in sorted(functions, key=lambda n: n.lineno):
        n = len(code.intersection(function_span(node)))
        if n > max_function:
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
