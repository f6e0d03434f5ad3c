"""pass@1 of `bench repo`: a package's own tests run on the package with one file filled.

The filled file is model output, so the tests run in `fim_exec`'s fenced child (`python -I`,
resource limits, no network, a new session killed whole at the timeout): the child copies the
package's tree into its own temporary folder, writes the filled file there, puts the copy (and
its `src/`) first on `sys.path` and runs pytest in it as the package's own configuration says
(`-x`: the first failure ends it). A package's tests count only when they pass on the package as
shipped (`Judge.runnable`, asked once a package and remembered in `pristine.json` beside the
cached sdists for registry packages); a hole of a package whose tests do not pass as shipped has
no pass@1. A filled file equal to the original passes without a run; other answers are run once
per distinct filled text.

It knows nothing of servers, holes or models: a tree, a path, a text, a verdict.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from spec_lsp.benchmarks.fim_exec import Outcome, run_program
from spec_lsp.benchmarks.repo_packages import PackageTree

RUNNER = """\
import os, shutil, sys
_root = os.path.join(os.getcwd(), "package")
shutil.copytree({root!r}, _root, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
with open(os.path.join(_root, {path!r}), "w", encoding="utf-8", errors="surrogateescape") as _f:
    _f.write({text!r})
os.chdir(_root)
sys.path[:0] = [_root, os.path.join(_root, "src")]
sys.dont_write_bytecode = True
import pytest
_args = ["-q", "-x", "-p", "no:cacheprovider", "-W", "ignore"]
_args += ["--deselect=" + _p for _p in {ignore!r}]
sys.exit(int(pytest.main(_args)))
"""


def run_tests(
    root: Path, path: str, text: str, timeout_s: float, ignore: tuple[str, ...] = ()
) -> Outcome:
    """The package at `root` with file `path` holding `text`: do its tests pass (but the test
    files `ignore` names)?"""
    source = RUNNER.format(root=str(root), path=path, text=text, ignore=list(ignore))
    return run_program(source, timeout_s)


@dataclass
class Judge:
    """Runs and remembers the verdicts of one bench run."""

    timeout_s: float = 120.0
    memory: Path | None = None  # pristine.json: whether a registry package's tests pass as shipped
    runs: int = 0
    _pristine: dict[str, bool] = field(default_factory=dict)
    _local: dict[str, bool] = field(default_factory=dict)  # folders on disk: not remembered
    _verdicts: dict[str, bool] = field(default_factory=dict)

    def runnable(self, source: PackageTree, remember: bool = True) -> bool:
        """Whether the package's tests pass as shipped (its first file written back as is);
        remembered in `memory` when `remember` (a registry package: the same files next time)."""
        known = self._load() if remember else self._local
        label = f"{source.label} (Python {sys.version_info[0]}.{sys.version_info[1]})"
        if label not in known:
            probe = source.code[0]
            text = (source.root / probe).read_text(encoding="utf-8", errors="surrogateescape")
            outcome = run_tests(source.root, probe, text, self.timeout_s, source.ignore)
            self.runs += 1
            known[label] = outcome.passed
            if not outcome.passed:
                print(
                    f"{source.label}: its tests fail as shipped ({outcome.detail})", file=sys.stderr
                )
            if remember and self.memory is not None:
                self.memory.parent.mkdir(parents=True, exist_ok=True)
                self.memory.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")
        return known[label]

    def passes(self, source: PackageTree, path: str, original: str, filled: str) -> bool:
        """Whether the package's tests pass with `path` holding `filled` instead of `original`."""
        if filled == original:
            return True
        key = hashlib.sha256(f"{source.root}\0{path}\0{filled}".encode("utf-8", "surrogatepass"))
        digest = key.hexdigest()
        if digest not in self._verdicts:
            outcome = run_tests(source.root, path, filled, self.timeout_s, source.ignore)
            self._verdicts[digest] = outcome.passed
            self.runs += 1
        return self._verdicts[digest]

    def _load(self) -> dict[str, bool]:
        if not self._pristine and self.memory is not None and self.memory.is_file():
            self._pristine.update(json.loads(self.memory.read_text()))
        return self._pristine
