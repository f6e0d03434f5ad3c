"""The npm set of `bench repo`: JavaScript and TypeScript packages fetched and cached from npm.

Each `NpmPackage` is pinned by name, version and the registry's `dist.integrity` (the sha512 of
the tarball, as npm's lockfiles hold it): small packages under a permissive licence (MIT, ISC,
BSD, Apache) written as several files that import each other. The bench asks the registry for
the version's `dist.tarball`, downloads it once (saying what and its size), checks the integrity,
and unpacks it with `repo_packages.unpack` (tarfile's `data` filter) under `cache_dir()/npm`, one
folder per package (every npm tarball's top folder is `package/`); the licence is read from the
unpacked `package.json` and a package that does not name a permissive one is refused.

Files split (`split_files`) into the package's own code (`CODE_SUFFIXES`, not `.d.ts`, not
minified, not `node_modules`, not config files, not the built copies (`dist/`, `build/`,
`browser/`, ..., and a `lib/` beside a `src/`) when a source folder `src/`/`source/`/`lib/`
holds code) and its tests (`test/`, `tests/`, `__tests__/`,
`spec/`, `*.test.*`, `*.spec.*`). Their tests need `node_modules` and a runner, so the npm set
has no pass@1: its trees say `language="javascript"` and the bench runs no tests for them.

It knows nothing of holes, servers or models.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from spec_lsp.benchmarks.repo_packages import SKIP_DIRS, PackageError, PackageTree, Say, unpack

REGISTRY = "https://registry.npmjs.org"
PERMISSIVE = re.compile(r"\b(MIT|ISC|BSD|Apache)\b", re.I)
CODE_SUFFIXES = frozenset({".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx"})
TYPE_SUFFIXES = (".d.ts", ".d.mts", ".d.cts")
SOURCE_DIRS = ("src", "source", "lib")  # the first with code is the source; those after it built
BUILT_DIRS = frozenset({"dist", "build", "out", "umd", "esm", "cjs", "browser"})
TEST_DIRS = frozenset({"test", "tests", "__tests__", "spec"})
NPM_SKIP = (SKIP_DIRS - {"build"}) | {"node_modules", "coverage", "types", "typings", "vendor"}
TEST_NAME = re.compile(r"\.(test|spec)\.[cm]?[jt]sx?$")
CONFIG_NAME = re.compile(r"(^|[.-])config\.[cm]?[jt]s$|^(gulpfile|gruntfile|karma)", re.I)


@dataclass(frozen=True)
class NpmPackage:
    """A pinned tarball of npm."""

    name: str
    version: str
    integrity: str  # the registry's dist.integrity: "sha512-" and the base64 digest

    @property
    def label(self) -> str:
        return f"{self.name.lstrip('@').replace('/', '-')}-{self.version}"


# Chosen 2026-12-07: the latest versions of 31 small npm packages downloaded and mined; kept
# those with a permissive licence, several files importing each other and at least 16 candidate
# holes in their own code. Left out: minimatch, lru-cache (BlueOak-1.0.0); js-yaml, marked, acorn,
# esprima, mustache, micromatch, fill-range (one file or one bundle); chalk, debug, nanoid, qs,
# commander, express, csv-parse (under 16 holes); uuid, diff, ejs (two built copies, no source);
# zod (1.1 MB, 373 files).
NPM_PACKAGES: tuple[NpmPackage, ...] = (
    NpmPackage(  # ISC; CommonJS
        "semver",
        "7.8.6",
        "sha512-9lpSSU4Mly3mrtruwLs1eLK6+gzbzqeBFwRNjIjE+9LuDpWdYctrQlQ3ej1Ilgi7gknpsTRnPoLP8DpCHqHIJw==",
    ),
    NpmPackage(  # MIT; CommonJS
        "picomatch",
        "4.0.7",
        "sha512-qcJu88Q2IWqJsDD529JKMdwGm/dvInW4HvQnRwiH9JtihJvzGOscDtHE3x1pBKeUOTysQ8kVmLnJ2kJu7yhcGA==",
    ),
    NpmPackage(  # MIT; CommonJS
        "braces",
        "3.0.3",
        "sha512-yQbXgO/OSZVD2IsiLlro+7Hf6Q18EJrKSEsdoMzKePKXct3gvD8oLcOQdIzGupr5Fj+EDe8gO/lxc1BzfMpxvA==",
    ),
    NpmPackage(  # ISC; ES modules
        "yargs-parser",
        "22.0.0",
        "sha512-rwu/ClNdSMpkSrUb+d6BRsSkLUq1fmfsY6TOpYzTwvwkg1/NRG85KBy3kq++A8LKQwX6lsu+aWad+2khvuXrqw==",
    ),
    NpmPackage(  # MIT; CommonJS
        "postcss",
        "8.5.34",
        "sha512-P1Qzj0XXZjMda74C7qiVnBG90UKNbyNUAOeQRBW8X63RsIMV57gevRqjnkELdwtZ/S2/uQFksJhmwuN8xShLPw==",
    ),
    NpmPackage(  # MIT; CommonJS
        "ws",
        "8.23.1",
        "sha512-1rzWDSN0NOi3tpwgHsQExjWRoKUGtjCkJ2gZRaaRtzhYLboMytOI9pj9PU7yCgY37auqdd4OyLofZDbkeuZmPA==",
    ),
    NpmPackage(  # BSD-2-Clause; CommonJS
        "nunjucks",
        "3.2.4",
        "sha512-26XRV6BhkgK0VOxfbU5cQI+ICFUtMLixv1noZn1tGU38kQH5A5nmmbk/O45xdyBhD1esk47nKrY0mvQpZIhRjQ==",
    ),
    NpmPackage(  # MIT; ES modules
        "handlebars",
        "4.7.10",
        "sha512-P5VJMVM7qgBn6vjXMw8WG9uVI+ncf2pi72j4de4yz5ZULLj2RGqLYaKOYGsgyrViQ0tePOVlN1tDCCXXtFqXKg==",
    ),
    NpmPackage(  # MIT; ES modules
        "fast-xml-parser",
        "5.12.1",
        "sha512-wR8dO/fx+z8C5exuem1e7BKOWvjsuzvjS/tvA/Xu3Z1zQqJGcXrPzXbcAiaMgp2KjreEROcTkmnnisrcmJ2hYQ==",
    ),
    NpmPackage(  # MIT; TypeScript
        "immer",
        "11.2.14",
        "sha512-Xujh/D+NWN1mM/eJb30ASOOTrI74DA6BV+SdkvfeIvHt8Pk70h0lP5l4LRIvBcEujxbw7LbVTFvcxgGg6pgvKA==",
    ),
    NpmPackage(  # MIT; TypeScript
        "ajv",
        "8.20.0",
        "sha512-Thbli+OlOj+iMPYFBVBfJ3OmCAnaSyNn4M1vz9T6Gka5Jt9ba/HIR56joy65tY6kx/FCF5VXNB819Y7/GUrBGA==",
    ),
)


def integrity_of(data: bytes) -> str:
    """npm's Subresource Integrity string of a tarball: `sha512-<base64>`."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")


def tarball_url(package: NpmPackage, registry: str = REGISTRY) -> str:
    """The version's `dist.tarball`, when the registry's `dist.integrity` is the pinned one."""
    url = f"{registry}/{package.name.replace('/', '%2F')}/{package.version}"
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            dist = json.load(response).get("dist", {})
    except (OSError, ValueError) as exc:
        raise PackageError(f"{package.label}: the registry did not answer ({exc})") from exc
    if dist.get("integrity") != package.integrity:
        raise PackageError(f"{package.label}: the registry's integrity is not the pinned one")
    return str(dist["tarball"])


def fetch(package: NpmPackage, cache: Path, say: Say, url: str | None = None) -> Path:
    """The tarball in `cache/tarballs`, downloaded (and said) when it is not there yet; its
    integrity checked either way."""
    folder = cache / "tarballs"
    archive = folder / f"{package.label}.tgz"
    if not archive.is_file():
        url = url or tarball_url(package)
        folder.mkdir(parents=True, exist_ok=True)
        partial = archive.with_suffix(".part")
        try:
            with urllib.request.urlopen(url, timeout=120) as response, partial.open("wb") as out:
                size = int(response.headers.get("Content-Length") or 0)
                say(f"downloading {package.label} ({size / 1024:.0f} KiB) from {url}")
                shutil.copyfileobj(response, out)
        except OSError as exc:
            raise PackageError(f"{package.label}: download failed ({exc})") from exc
        partial.replace(archive)
    found = integrity_of(archive.read_bytes())
    if found != package.integrity:
        archive.unlink()
        raise PackageError(f"{package.label}: integrity {found[:19]}… is not the pinned one")
    return archive


def licence(root: Path) -> str:
    """The licence package.json names (`license`, or the old `{type}` and `licenses` forms);
    PackageError when that is not a permissive one."""
    meta = root / "package.json"
    try:
        data = json.loads(meta.read_text(encoding="utf-8")) if meta.is_file() else {}
    except ValueError:
        data = {}
    said = [data.get("license"), *(data.get("licenses") or [])]
    names = [str(s.get("type", "")) if isinstance(s, dict) else str(s or "") for s in said]
    named = [n for n in names if PERMISSIVE.search(n)]
    if not named:
        raise PackageError(f"{root.parent.name}: no permissive licence in package.json ({names})")
    return named[0]


def _kind(parts: tuple[str, ...]) -> str | None:
    """ "test", "code" or None (neither) for a file's path parts."""
    name = parts[-1]
    if not any(name.endswith(s) for s in CODE_SUFFIXES) or name.endswith(TYPE_SUFFIXES):
        return None
    if name.startswith(".") or ".min." in name or CONFIG_NAME.search(name):
        return None
    if any(p in NPM_SKIP or p.startswith(".") for p in parts[:-1]):
        return None
    if any(p in TEST_DIRS for p in parts[:-1]) or TEST_NAME.search(name):
        return "test"
    return "code"


def split_files(root: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The JavaScript and TypeScript files under `root`: (the package's code, its tests)."""
    code: list[str] = []
    tests: list[str] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        parts = path.relative_to(root).parts
        kind = _kind(parts)
        if kind is not None:
            (tests if kind == "test" else code).append("/".join(parts))
    tops = {p.split("/", 1)[0] for p in code if "/" in p}
    source = next((i for i, d in enumerate(SOURCE_DIRS) if d in tops), None)
    if source is not None:
        built = BUILT_DIRS | set(SOURCE_DIRS[source + 1 :])
        code = [p for p in code if not _built(p, built)]
    return tuple(code), tuple(tests)


def _built(path: str, built: frozenset[str]) -> bool:
    """Under a build output folder at the top (`dist/`, `dist-node/`, a `lib/` beside `src/`)."""
    top = path.split("/", 1)[0] if "/" in path else ""
    return top in built or top.startswith("dist-")


def prepare(package: NpmPackage, cache: Path, say: Say) -> PackageTree:
    """The package fetched (when not cached), checked, unpacked and its files split."""
    folder = cache / "npm"
    root = unpack(fetch(package, folder, say), folder / "src" / package.label)
    code, tests = split_files(root)
    return PackageTree(package.label, root, code, tests, licence(root), language="javascript")


def local(root: Path) -> PackageTree:
    """A JavaScript or TypeScript folder on disk as a package (its licence not checked)."""
    code, tests = split_files(root)
    return PackageTree(root.name, root, code, tests, "local", language="javascript")
