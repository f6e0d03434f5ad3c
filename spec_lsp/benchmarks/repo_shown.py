"""What the definitions context shows at `bench repo`'s holes, without a model: for each hole, the
definitions the server's `RepoContext` would freeze at its first pause there (the workspace index
over the same packages, the preset's budget), and whether the hole's first imported name is among
them. Counts only: it says whether the model could have read the definition it needed, not
whether it wrote the line.

    python -m spec_lsp.benchmarks.repo_shown --preset coder --holes 30 --packages toolz,h11

The packages come from `bench repo`'s cache (fetched there on first use, as the bench does) or
from `--folder`; the holes are the bench's own for the same `--holes` and `--seed`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from spec_lsp.benchmarks.repo import sources
from spec_lsp.benchmarks.repo_client import file_uri
from spec_lsp.benchmarks.repo_editor import language_id
from spec_lsp.benchmarks.repo_hole import RepoHole
from spec_lsp.benchmarks.repo_holes import mine, read
from spec_lsp.completion.repo import RepoContext
from spec_lsp.config import Options
from spec_lsp.presets import load_preset
from spec_lsp.prompt import PromptBuilder
from spec_lsp.symbols.lookup import Reference, Resolver
from spec_lsp.syntax.tags import FileTags

MAX_TOKENS = 64  # `bench repo`'s maxTokens: the prompt budget it leaves


@dataclass
class ShownCounts:
    holes: int = 0
    shown: int = 0  # some definition shown
    resolved: int = 0  # the hole's first name resolves to a definition (not a module, say)
    named: int = 0  # that definition among those shown
    wanted: int = 0  # ... among those the lookup wanted before the budget cut
    names: list[list[str]] = field(default_factory=list)  # per hole, the names shown


def definitions_budget(preset: str) -> int:
    """The characters `Planner` hands `RepoContext.refresh` with this preset (a third of the
    prefix budget, two thirds of that)."""
    info = load_preset(preset)
    builder = PromptBuilder(info.fim, info.context_tokens, MAX_TOKENS)
    return builder.budget.prefix_chars // 3 * 2 // 3


def tally(
    roots: list[Path], holes_by_root: dict[Path, list[RepoHole]], budget: int
) -> dict[str, ShownCounts]:
    """Per package label (the root's name), the counts over its holes."""
    repo = RepoContext()
    repo.configure(Options(definitions=True, edit_context=False))
    repo.index.roots = tuple(str(r) for r in roots)
    repo.index.build(repo.index.roots)
    out: dict[str, ShownCounts] = {}
    for root, holes in holes_by_root.items():
        t = out.setdefault(root.name, ShownCounts())
        for hole in holes:
            doc = hole.document(read(root, hole.path))
            row = doc.count("\n", 0, hole.start)
            col = hole.start - (doc.rfind("\n", 0, hole.start) + 1)
            uri = file_uri(root, hole.path)
            lines = doc.split("\n")
            repo.index.update(str((root / hole.path).resolve()), doc, language_id(hole.path))
            repo._frozen.pop(uri, None)  # each hole is the file's first pause
            repo.refresh(uri, lines, row, col, budget)
            shown = repo._frozen[uri].definitions
            wanted = repo._definitions(uri, lines, row, col)
            path = str((root / hole.path).resolve())
            resolver = Resolver(repo.index, path, repo.index.tags(path) or FileTags())
            target = resolver.resolve(Reference(hole.names[0]), lines, row)  # through an alias too
            repo.index.read(path)  # the file as on disk again
            t.holes += 1
            t.shown += bool(shown)
            t.resolved += bool(target)
            t.named += any(d in shown for d in target)
            t.wanted += any(d in wanted for d in target)
            t.names.append([d.tag.name for d in shown])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spec_lsp.benchmarks.repo_shown")
    parser.add_argument("--preset", default="coder")
    parser.add_argument("--holes", type=int, default=30, help="holes a package (as bench repo)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--packages", default="", help="comma-separated (default: all)")
    parser.add_argument("--folder", type=Path, action="append", default=[])
    parser.add_argument("--json", type=Path, help="write the counts and names shown here")
    args = parser.parse_args(argv)
    names = [n for n in args.packages.split(",") if n]
    trees = sources(names, args.folder, sys.stderr)
    started = time.perf_counter()
    budget = definitions_budget(args.preset)
    holes = {tree.root: mine(tree, args.holes, args.seed) for tree in trees}
    counts = tally([t.root for t in trees], holes, budget)
    print(f"definitions budget {budget} characters ({args.preset}); per package:")
    total = ShownCounts()
    for label, t in counts.items():
        print(
            f"  {label}: {t.holes} holes, a definition shown at {t.shown}; the hole's name has "
            f"one at {t.resolved}, shown at {t.named} (wanted at {t.wanted})"
        )
        total.holes, total.shown = total.holes + t.holes, total.shown + t.shown
        total.named, total.wanted = total.named + t.named, total.wanted + t.wanted
        total.resolved += t.resolved
    print(
        f"all: {total.holes} holes, a definition shown at {total.shown}; the hole's name has one "
        f"at {total.resolved}, shown at {total.named} (wanted at {total.wanted}); "
        f"{time.perf_counter() - started:.1f} s"
    )
    if args.json:
        report = {label: t.__dict__ for label, t in counts.items()}
        args.json.write_text(json.dumps({"budget": budget, "packages": report}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
