"""The packages of `bench repo`: which ones, fetched and cached from the package registry.

Each `Package` is pinned by name, version and the sha256 of its source distribution (sdist) on
PyPI: small pure-Python projects under a permissive licence (MIT, BSD, Apache, PSF, ISC) that
ship their tests in the sdist and run them offline with no dependency but pytest (checked when
the list was made: every one passed its own tests as shipped). The bench fetches an sdist once,
saying what it downloads and its size, checks the sha256, and unpacks it under the user cache
(`cache_dir()`: `$XDG_CACHE_HOME/spec-lsp/bench-repo`, else `~/.cache/...`); the licence is read
from the unpacked `PKG-INFO` and a package that does not say a permissive one is refused.

`LocalPackage` stands for a folder already on disk (`--source DIR`: a project being worked on, or
the tests' synthetic package): nothing is fetched. Both give a `PackageTree`: where the unpacked
tree is, and its files split into the package's own code and its tests.

It knows nothing of holes, servers or models.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tarfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PYPI_SIMPLE = "https://pypi.org/simple"
PERMISSIVE = re.compile(r"\b(MIT|BSD|Apache|PSF|Python Software Foundation|ISC)\b", re.I)
SKIP_DIRS = frozenset({".git", "docs", "doc", "examples", "benchmark", "benchmarks", "build"})
SKIP_DIRS |= {"scripts", "tools", "fuzz", "bin", "changelog", "downstream", "__pycache__"}
TEST_DIRS = frozenset({"tests", "test", "testing"})

Say = Callable[[str], None]


class PackageError(RuntimeError):
    """A package that cannot be used: not downloadable, a wrong checksum, no permissive licence."""


@dataclass(frozen=True)
class Package:
    """A pinned sdist of PyPI."""

    name: str
    version: str
    sha256: str  # of the sdist archive, as PyPI lists it
    ignore: tuple[str, ...] = ()  # test files that need what the fence forbids (a socket)

    @property
    def label(self) -> str:
        return f"{self.name}-{self.version}"


# Chosen 2026-12-06: each passes its own tests from the unpacked sdist with pytest alone
# (tomli's sdist ships no tests, itsdangerous and jmespath fail as shipped; left out).
PACKAGES: tuple[Package, ...] = (
    Package("toolz", "1.2.0", "9667a038e9d6ecba37995e26cb2f59ec6420b6ad8dd9677de59db9b956b08490"),
    Package(
        "h11",
        "0.16.0",
        "4e35b956cf45792e4caa5885e69fba00bdbc6ffafbfa020300e549b208ee5ff1",
        ignore=("h11/tests/test_against_stdlib_http.py",),  # a local HTTP server
    ),
    Package(
        "cachetools", "8.0.3", "79245d0d90464e29355f13658cd769e57d98ed06242d3c6fbd71796ca0938ef9"
    ),
    Package("pluggy", "1.7.0", "d1eaa46ebb595891b860ab086b4d09c8588af65ebd4361b8e8f4bb8920b90ba8"),
    Package(
        "pyflakes", "4.1.0", "592beb57058eb82eb190fb7514f2081c555c51000b029ff71286a681e6cf2f83"
    ),
    Package(
        "sqlparse", "0.6.1", "ca722573f848ff2d30e40ea30f53a104b7dea7635ea9285891263eb2c58fb6e7"
    ),
    Package(
        "simplejson", "4.3.0", "ffe34ab51a0d37e6d1c661a5672df00d2d5e18804e38eac07abffb83fa5ec3d7"
    ),
    Package("click", "8.5.1", "9bbfada76703fd1d784b83eea012e3e8c6a001a876543ef104fa56aaaeb072b4"),
    Package("mistune", "3.4.0", "2eaf7952af928ca8d33b779762effc1da517b62c6ad85ec8ca957e3b07b9782a"),
    Package(
        "boltons",
        "26.2.0",
        "d39cfd15c1a1c3bd4d705c82252fa9edb8e4f5e8cc039f8e39afac7b1b47e92c",
        ignore=("tests/test_socketutils.py", "tests/test_funcutils_fb_py3.py"),  # sockets
    ),
    Package("idna", "3.21", "13c8b14853c5c336eaab526f3390817e9c8fcd8fa175abdd1a7480a5c94f99cb"),
    Package(
        "more-itertools",
        "11.2.1",
        "cbf08fd0af284dc69718b9b76a8e6203df624d70209ea511e4219d350c856f63",
    ),
)


@dataclass(frozen=True)
class PackageTree:
    """An unpacked package: its root folder, its own code and its tests (paths relative to
    `root`, `/`-separated, sorted)."""

    label: str
    root: Path
    code: tuple[str, ...]
    tests: tuple[str, ...]
    license: str
    ignore: tuple[str, ...] = ()  # test files left out of the test runs
    language: str = "python"  # "javascript" for the npm set's (TypeScript too): no pass@1


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spec-lsp" / "bench-repo"


def sdist_url(package: Package, index: str = PYPI_SIMPLE) -> tuple[str, int]:
    """The URL and size of the package's sdist whose sha256 is the pinned one (the index's
    JSON simple API, PEP 691, as pip reads it)."""
    request = urllib.request.Request(
        f"{index}/{package.name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            project = json.load(response)
    except (OSError, ValueError) as exc:
        raise PackageError(f"{package.label}: the index did not answer ({exc})") from exc
    for file in project.get("files", []):
        if file.get("hashes", {}).get("sha256") == package.sha256:
            return str(file["url"]), int(file.get("size") or 0)
    raise PackageError(f"{package.label}: the index lists no file with sha256 {package.sha256}")


def fetch(package: Package, cache: Path, say: Say, url: str | None = None) -> Path:
    """The sdist archive in `cache/sdists`, downloaded (and said) when it is not there yet; its
    sha256 checked either way."""
    folder = cache / "sdists"
    archive = folder / f"{package.label}.tar.gz"
    if not archive.is_file():
        size = 0
        if url is None:
            url, size = sdist_url(package)
        say(f"downloading {package.label} ({size / 1024:.0f} KiB) from {url}")
        folder.mkdir(parents=True, exist_ok=True)
        partial = archive.with_suffix(".part")
        try:
            with urllib.request.urlopen(url, timeout=120) as response, partial.open("wb") as out:
                shutil.copyfileobj(response, out)
        except OSError as exc:
            raise PackageError(f"{package.label}: download failed ({exc})") from exc
        partial.replace(archive)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != package.sha256:
        archive.unlink()
        raise PackageError(f"{package.label}: sha256 {digest[:12]}… is not the pinned one")
    return archive


def unpack(archive: Path, dest: Path) -> Path:
    """The archive's single top folder, extracted under `dest` once (tarfile's `data` filter:
    no links out, no absolute paths)."""
    with tarfile.open(archive) as tar:
        tops = {name.split("/", 1)[0] for name in tar.getnames()}
        if len(tops) != 1:
            raise PackageError(f"{archive.name}: not one top folder ({sorted(tops)[:3]})")
        root = dest / tops.pop()
        if not root.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
            tar.extractall(dest, filter="data")
    return root


def licence(root: Path) -> str:
    """The licence its PKG-INFO names (License-Expression, License, classifiers); PackageError
    when that is not a permissive one."""
    info = root / "PKG-INFO"
    text = info.read_text(encoding="utf-8", errors="replace") if info.is_file() else ""
    said = [
        line.split(":", 1)[1].strip()
        for line in text.split("\n\n", 1)[0].splitlines()
        if line.startswith(("License-Expression:", "License:", "Classifier: License ::"))
    ]
    named = [s for s in said if PERMISSIVE.search(s)]
    if not named:
        raise PackageError(f"{root.name}: no permissive licence in PKG-INFO ({said[:2]})")
    return named[0].split("::")[-1].strip()


def split_files(root: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The Python files under `root`: (the package's code, its tests). Tests are under a
    `tests`/`test`/`testing` folder or named `test_*.py`/`*_test.py`/`conftest.py`; setup
    scripts, docs, examples and tools are neither."""
    code: list[str] = []
    tests: list[str] = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if any(p in SKIP_DIRS or p.endswith(".egg-info") for p in parts[:-1]):
            continue
        name = parts[-1]
        if len(parts) == 1 and not name.startswith(("test_", "conftest")):
            continue  # setup.py, conf.py and such at the top
        is_test = any(p in TEST_DIRS for p in parts[:-1]) or name == "conftest.py"
        is_test = is_test or name.startswith("test_") or name.endswith("_test.py")
        (tests if is_test else code).append("/".join(parts))
    return tuple(code), tuple(tests)


def prepare(package: Package, cache: Path, say: Say) -> PackageTree:
    """The package fetched (when not cached), checked, unpacked and its files split."""
    root = unpack(fetch(package, cache, say), cache / "src")
    code, tests = split_files(root)
    return PackageTree(package.label, root, code, tests, licence(root), package.ignore)


def local(root: Path) -> PackageTree:
    """A folder on disk as a package (its licence not checked: it is the user's own)."""
    code, tests = split_files(root)
    return PackageTree(root.name, root, code, tests, "local")
