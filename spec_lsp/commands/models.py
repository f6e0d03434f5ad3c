"""`spec-lsp models list|fetch`: the presets under models/ and whether each is available offline."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("models", help="list model presets, fetch the bundled model")
    msub = p.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    ls = msub.add_parser("list", help="show presets and whether each is available offline")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ls.set_defaults(func=cmd_list)
    fetch = msub.add_parser("fetch", help="convert and cache a preset's bundled model (offline)")
    fetch.add_argument("preset", nargs="?", default="bundled")
    fetch.set_defaults(func=cmd_fetch)


def cmd_list(args: argparse.Namespace) -> int:
    from spec_lsp.engine.loading import is_available_offline
    from spec_lsp.presets import list_presets, weights_label

    rows = []
    for p in list_presets():
        sources = [p.resolve(p.target)] + ([p.resolve(p.draft)] if p.draft else [])
        rows.append(
            {
                "name": p.name,
                "target": p.target,
                "draft": p.draft,
                "method": p.method,
                "fim": p.fim,
                # A remote engine's weights are its server's business: the column names the kind.
                "weights": p.backend.kind
                if p.backend
                else f"{weights_label(p, 'cpu')}/{weights_label(p, 'cuda')}",
                "backend": p.backend.kind if p.backend else "local",
                "offline": p.backend is None and all(is_available_offline(s) for s in sources),
                "description": p.description,
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max([len("preset"), *(len(str(r["name"])) for r in rows)])
    print(
        f"{'preset':<{width}} {'offline':<8} {'method':<7} {'fim':<10} {'weights cpu/cuda':<18} "
        "target / draft"
    )
    for r in rows:
        pair = f"{r['target']} / {r['draft'] or '-'}"
        print(
            f"{r['name']:<{width}} {_where(r):<8} {r['method']:<7} {r['fim']:<10} "
            f"{r['weights']:<18} {pair}"
        )
    return 0


def _where(row: Mapping[str, object]) -> str:
    """The offline column: yes/no for a local pair, "remote" for one a server runs."""
    return "remote" if row["backend"] != "local" else "yes" if row["offline"] else "no"


def cmd_fetch(args: argparse.Namespace) -> int:
    from spec_lsp.engine.loading import ModelLoadError, fetch_bundled
    from spec_lsp.presets import PresetError, load_preset

    try:
        preset = load_preset(args.preset)
        done = False
        for source in (preset.target, preset.draft):
            if source and source.startswith("bundled:"):
                path = fetch_bundled(
                    source.split(":", 1)[1], lambda m, _f: print(m, file=sys.stderr)
                )
                print(f"{source}: {path}")
                done = True
        if not done:
            print(
                f"preset {preset.name} has no bundled model; its models load from the hub or disk"
            )
    except (ModelLoadError, PresetError) as exc:
        print(f"spec-lsp: {exc}", file=sys.stderr)
        return 1
    return 0
