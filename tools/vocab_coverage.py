"""The share of a model's tokens that a draft output over the first N ids can say (`draft_vocab`).

Usage: python tools/vocab_coverage.py SOURCE [--cuts 16384,32768,...] [--fim REPORT.json ...]
       [--files GLOB ...] [--time FILE.gguf]

SOURCE is what a preset names (`gguf:qwen2.5-coder-0.5b-instruct-q4_k_m`, a .gguf path, a hub
id). For each cut it prints the share of tokens with an id below it (special tokens, always kept,
count as covered) in: the completions of `spec-lsp bench fim --json` reports (the target's own
answers, every mode's rows) and the text of the files the globs match (code of other languages).
With `--time`, the draft's one-token pass (lean forward, over a 900-token cache, p50 of 40) with
its whole output layer and with each cut (run it on a quiet machine; OMP_NUM_THREADS sets threads).
"""

from __future__ import annotations

import argparse
import glob
import json
import time
from collections.abc import Iterable
from pathlib import Path

from spec_lsp.engine.draft_vocab import kept_ids
from spec_lsp.engine.loading import load_tokenizer


def _fim_texts(paths: Iterable[str]) -> list[str]:
    texts = []
    for path in paths:
        report = json.loads(Path(path).read_text())
        for rows in report["rows"].values():
            texts += [row["completion"] for row in rows if row.get("completion")]
    return texts


def _file_texts(patterns: Iterable[str], limit: int) -> dict[str, list[str]]:
    by_kind: dict[str, list[str]] = {}
    for pattern in patterns:
        for name in sorted(glob.glob(pattern, recursive=True))[:limit]:
            try:
                text = Path(name).read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            by_kind.setdefault(Path(name).suffix or name, []).append(text)
    return by_kind


def _pass_ms(gguf: str, tokenizer: object, rows: int) -> float:
    from spec_lsp.engine import lean
    from spec_lsp.engine.draft_vocab import restrict_output
    from spec_lsp.engine.weights import gguf_model

    model = gguf_model.load_model(Path(gguf).expanduser())
    if rows:
        restrict_output(model, tokenizer, rows)
    decoder = lean.LeanDecoder(model)
    cache = decoder.new_cache()
    decoder.forward(list(range(1000, 1900)), cache)
    times = []
    for i in range(40):
        start = time.perf_counter()
        decoder.forward([500 + i], cache)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2] * 1000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("source")
    p.add_argument("--cuts", default="8192,16384,32768,49152,65536")
    p.add_argument("--fim", nargs="*", default=[], help="bench fim --json reports")
    p.add_argument("--files", nargs="*", default=[], help="globs of source files")
    p.add_argument("--per-glob", type=int, default=200, help="files read per glob at most")
    p.add_argument("--time", metavar="GGUF", help="time the draft's pass with each cut")
    args = p.parse_args()
    tokenizer = load_tokenizer(args.source)
    vocab = len(tokenizer)
    cuts = [int(c) for c in args.cuts.split(",")]
    corpora = {"fim completions": _fim_texts(args.fim)} if args.fim else {}
    corpora.update(_file_texts(args.files, args.per_glob))
    print(f"{'text':<18} {'tokens':>9} " + " ".join(f"{c:>8}" for c in cuts))
    for name, texts in corpora.items():
        ids = [i for text in texts for i in tokenizer.encode(text, add_special_tokens=False)]
        if not ids:
            continue
        shares = []
        for cut in cuts:
            kept = set(kept_ids(tokenizer, cut, vocab).tolist())
            shares.append(sum(i in kept for i in ids) / len(ids))
        row = " ".join(f"{s:>8.4f}" for s in shares)
        print(f"{name:<18} {len(ids):>9} {row}")
    if args.time:
        times = [_pass_ms(args.time, tokenizer, rows) for rows in [0, *cuts]]
        row = " ".join(f"{t:>8.2f}" for t in times[1:])
        print(f"{'pass ms (all rows)':<18} {times[0]:>9.2f} {row}")


if __name__ == "__main__":
    main()
