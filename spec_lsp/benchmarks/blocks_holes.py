"""The multi-line holes of `bench blocks`, built offline, and how each is judged.

Two sets, both holes of whole lines, the cursor at the start of the hole's empty line:

- **HumanEval widened**: each single-line problem of HumanEval infilling (MIT, OpenAI's
  human-eval-infilling) grown to the end of its enclosing block: the lines after the hole that
  are indented at least as deep (blank lines inside kept), judged by the problem's own tests.
  Per task the largest such hole of 2-10 lines, in task order.
- **Standard library**: blocks cut with tree-sitter (`syntax.holes`: a compound statement's
  whole body, or a function's last statements) from pure-Python modules of this interpreter's
  standard library (PSF License 2.0; the text is read where it is installed, never copied into
  this repository), judged by the module's own unit tests (`test.test_<module>`) run on the
  filled module, which a child imports in place of the installed one. Only holes that the tests
  notice are kept: the module passes them as installed and fails them with the hole's block
  replaced by `pass`. Up to `per_module` holes a module, drawn with a fixed seed, then taken
  round-robin over the modules.

Knows nothing of models or the completion service; the child runs through `fim_exec`'s fence.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from spec_lsp.benchmarks.fim_exec import Outcome, check, run_program
from spec_lsp.benchmarks.fim_problems import Problem, read_problems
from spec_lsp.benchmarks.prompts import stdlib_dir
from spec_lsp.syntax.holes import block_holes

# Pure-Python modules with their own tests in `test.test_<name>`, ordinary application code. A
# module the test harness imports before the filled one (collections imports heapq, say) fails
# the check that the filled file is the one imported, and is left out.
STDLIB_MODULES = (
    *("textwrap", "shlex", "difflib", "fnmatch", "graphlib", "fractions", "colorsys"),
    *("calendar", "pprint", "ipaddress", "statistics", "base64", "netrc", "plistlib"),
    *("gettext", "configparser", "bisect", "string", "glob", "quopri"),
)
MIN_LINES, MAX_LINES = 2, 8  # a standard library hole's lines
HUMANEVAL_LINES = 10  # a widened HumanEval hole's most lines

# Runs in the fenced child (`fim_exec.run_program`): writes the filled module into its own
# working directory, imports it from there (checked), then runs the module's unit tests.
RUNNER = """\
import os, sys
with open({name!r} + ".py", "w", encoding="utf-8") as _f:
    _f.write({source!r})
sys.path.insert(0, os.getcwd())
import {name} as _m
if os.path.dirname(os.path.abspath(_m.__file__)) != os.getcwd():
    sys.exit("not the filled module: " + _m.__file__)
import unittest
_suite = unittest.defaultTestLoader.loadTestsFromName("test.test_{name}")
_run = unittest.TextTestRunner(stream=sys.stderr, verbosity=0).run(_suite)
sys.exit(0 if _run.wasSuccessful() and _run.testsRun else 1)
"""


@dataclass(frozen=True)
class Hole:
    """A hole of whole lines: the document is `prompt`, an empty line, `suffix`."""

    name: str  # HumanEval/12 or textwrap.py:130-137
    kind: str  # "humaneval", "stdlib-body" or "stdlib-tail"
    prompt: str  # the text before the hole, ending with a line break
    suffix: str  # the text after it
    solution: str  # the hole's lines as written, ending with a line break
    problem: Problem | None = field(default=None, compare=False)  # HumanEval: its tests
    module: str | None = None  # the standard library module the hole is cut from

    def document(self) -> str:
        """The document at the hole: its empty line open, the cursor at its start."""
        return self.prompt + "\n" + self.suffix

    def filled(self, text: str) -> str:
        """The document with `text` inserted at the cursor, as an editor applies the item."""
        return self.prompt + text + "\n" + self.suffix

    def judge(self, text: str, timeout_s: float) -> Outcome:
        """Whether the document filled with `text` passes the hole's tests."""
        if self.problem is not None:
            return check(self.problem, self.filled(text), timeout_s)
        assert self.module is not None
        return run_tests(self.module, self.filled(text), timeout_s)


def run_tests(module: str, source: str, timeout_s: float) -> Outcome:
    """`test.test_<module>` run on `source` imported as `module`, in a fenced child."""
    return run_program(RUNNER.format(name=module, source=source), timeout_s)


def widen_to_block(problem: Problem) -> Problem | None:
    """The problem with its hole grown to the end of its enclosing block (None: it cannot grow,
    the block ends after the hole's line)."""
    solution = problem["canonical_solution"]
    if not solution.strip() or not solution.endswith("\n"):
        return None
    depth = _indent(solution.splitlines()[0])
    rest = problem["suffix"].splitlines(keepends=True)
    taken = 0
    for n, line in enumerate(rest):
        if line.strip() and _indent(line) < depth:
            break
        if line.strip():
            taken = n + 1  # blank lines count only when code of the block follows them
    if not taken:
        return None
    grown = solution + "".join(rest[:taken])
    return {**problem, "canonical_solution": grown, "suffix": "".join(rest[taken:])}


def humaneval_holes(data: Path, limit: int) -> list[Hole]:
    """Per task (HumanEval/N) the largest of its widened holes of `MIN_LINES`-`HUMANEVAL_LINES`
    lines (the first of equals: the whole enclosing block), in task order."""
    tasks: dict[str, list[Problem]] = {}
    for problem in read_problems(data):
        grown = widen_to_block(problem)
        if grown is not None and MIN_LINES <= _lines(grown) <= HUMANEVAL_LINES:
            task = problem["task_id"].rsplit("/L", 1)[0].split("/", 1)[-1]
            tasks.setdefault(task, []).append(grown)
    holes = []
    for grown_holes in tasks.values():
        p = max(grown_holes, key=_lines)
        solution = p["canonical_solution"]
        holes.append(Hole(p["task_id"], "humaneval", p["prompt"], p["suffix"], solution, problem=p))
    return holes[:limit]


def _lines(problem: Problem) -> int:
    return problem["canonical_solution"].count("\n")


def stdlib_candidates(module: str, per_module: int, seed: int = 0) -> list[Hole]:
    """Up to `per_module` whole-block holes of `module`, drawn with `seed`, in line order."""
    path = stdlib_dir() / f"{module}.py"
    source = path.read_text(encoding="utf-8")
    lines = source.split("\n")
    spans = block_holes(source, "python", MIN_LINES, MAX_LINES)
    spans = random.Random(f"{seed}:{module}").sample(spans, min(per_module, len(spans)))
    holes = []
    for span in sorted(spans, key=lambda s: s.first):
        prompt = "\n".join(lines[: span.first]) + "\n"
        solution = "\n".join(lines[span.first : span.last + 1]) + "\n"
        suffix = "\n".join(lines[span.last + 1 :])
        name = f"{module}.py:{span.first + 1}-{span.last + 1}"
        holes.append(Hole(name, f"stdlib-{span.kind}", prompt, suffix, solution, module=module))
    return holes


def noticed(hole: Hole, timeout_s: float) -> bool:
    """Whether the module's tests fail with the hole's block replaced by `pass`."""
    first = hole.solution.splitlines()[0]
    return not hole.judge(" " * _indent(first) + "pass", timeout_s).passed


def stdlib_holes(
    limit: int,
    per_module: int = 4,
    timeout_s: float = 60.0,
    say: Callable[[str], None] = lambda _: None,
    cache: Path | None = None,
) -> list[Hole]:
    """`limit` holes that the tests notice, round-robin over the modules that pass their own
    tests as installed (checks run in children: a few minutes for the whole list). `cache`: a
    JSON file keeping the holes chosen (names), kept while the interpreter and its modules'
    sizes are the same."""
    key = [sys.version, per_module, *(_stamp(m) for m in STDLIB_MODULES)]
    if cache is not None and cache.is_file():
        held = json.loads(cache.read_text(encoding="utf-8"))
        if held.get("key") == key:
            names = set(held["holes"])
            found = [h for m in STDLIB_MODULES for h in _candidates(m, per_module)]
            by_name = {h.name: h for h in found if h.name in names}
            return [by_name[n] for n in held["holes"] if n in by_name][:limit]
    chosen = _checked_holes(per_module, timeout_s, say)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        record = {"key": key, "holes": [h.name for h in chosen]}
        cache.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return chosen[:limit]


def _stamp(module: str) -> list[object]:
    path = stdlib_dir() / f"{module}.py"
    return [module, path.stat().st_size if path.is_file() else None]


def _candidates(module: str, per_module: int) -> list[Hole]:
    return (
        stdlib_candidates(module, per_module) if (stdlib_dir() / f"{module}.py").is_file() else []
    )


def _checked_holes(per_module: int, timeout_s: float, say: Callable[[str], None]) -> list[Hole]:
    """Every hole the tests notice, round-robin over the modules."""
    kept: list[list[Hole]] = []
    for module in STDLIB_MODULES:
        path = stdlib_dir() / f"{module}.py"
        if not path.is_file():
            continue
        start = time.perf_counter()
        installed = run_tests(module, path.read_text(encoding="utf-8"), timeout_s)
        if not installed.passed:
            say(f"blocks: {module} left out ({installed.reason}: {installed.detail[-120:]})")
            continue
        # A block replaced by `pass` may loop for ever: what runs 3x longer than the module's
        # tests as installed has noticed.
        patience = min(timeout_s, 3 * (time.perf_counter() - start) + 2)
        holes = [h for h in stdlib_candidates(module, per_module) if noticed(h, patience)]
        say(f"blocks: {module}: {len(holes)} holes its tests notice")
        kept.append(holes)
    chosen: list[Hole] = []
    for round_ in range(per_module):
        chosen += [holes[round_] for holes in kept if round_ < len(holes)]
    return chosen


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
