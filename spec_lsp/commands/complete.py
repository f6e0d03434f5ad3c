"""`spec-lsp complete FILE:LINE:COL`: one suggestion at a position, printed with its stats."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "complete", help="print the suggestion at FILE:LINE:COL (1-based) and its stats"
    )
    p.add_argument("location", help="FILE:LINE:COL, 1-based line and column (characters)")
    p.add_argument("--preset", default="bundled")
    p.add_argument("--device", default="auto")
    p.add_argument("--max-tokens", type=int, default=None)
    p.add_argument("--method", choices=["off", "ngram", "draft", "both"], default=None)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_complete)


def split_location(location: str) -> tuple[Path, int, int]:
    try:
        file, line, col = location.rsplit(":", 2)
        return Path(file), int(line), int(col)
    except ValueError as exc:
        raise SystemExit(f"spec-lsp: expected FILE:LINE:COL, got {location!r}") from exc


def offset_of(text: str, line: int, col: int) -> int:
    lines = text.splitlines(keepends=True)
    if not 1 <= line <= len(lines) + 1:
        raise SystemExit(f"spec-lsp: line {line} is outside the file (1..{len(lines)})")
    start = sum(len(x) for x in lines[: line - 1])
    content = lines[line - 1].rstrip("\r\n") if line <= len(lines) else ""
    if not 1 <= col <= len(content) + 1:
        raise SystemExit(f"spec-lsp: column {col} is outside line {line} (1..{len(content) + 1})")
    return start + col - 1


def cmd_complete(args: argparse.Namespace) -> int:
    from spec_lsp.engine.api import GenerationRequest
    from spec_lsp.engine.loading import ModelLoadError, load_engine

    path, line, col = split_location(args.location)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"spec-lsp: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return 1
    offset = offset_of(text, line, col)
    try:
        engine = load_engine(
            args.preset, device=args.device, progress=lambda m, _f: print(m, file=sys.stderr)
        )
    except ModelLoadError as exc:
        print(f"spec-lsp: {exc}", file=sys.stderr)
        return 1
    prefix, suffix = text[:offset], text[offset:]
    prompt, stop_cb, finish = _prompt_and_rules(engine, path, prefix, suffix)
    max_tokens = args.max_tokens or engine.preset.max_new_tokens
    result = engine.generate(
        GenerationRequest(
            prompt=prompt,
            max_new_tokens=max_tokens,
            temperature=args.temperature,
            method=args.method,
            stop_callback=stop_cb,
        )
    )
    suggestion = finish(result.text)
    if args.json:
        print(
            json.dumps(
                {"suggestion": suggestion, "raw": result.text, "stats": result.stats.to_dict()},
                indent=2,
            )
        )
        return 0
    print(f"--- suggestion at {path}:{line}:{col} ({engine.name}, {engine.device})")
    print(suggestion if suggestion else "(no suggestion)")
    print("--- stats")
    for key, value in result.stats.to_dict().items():
        print(f"{key:>18}: {round(value, 2) if isinstance(value, float) else value}")
    return 0


def _prompt_and_rules(engine, path: Path, prefix: str, suffix: str):  # type: ignore[no-untyped-def]
    """The prompt (FIM template of the preset's family) and the syntax layer's stop/trim rules."""
    from spec_lsp.prompt import PromptBuilder, after_lead, unlead
    from spec_lsp.syntax import SyntaxService

    syntax = SyntaxService()
    uri = path.resolve().as_uri()
    syntax.open(uri, path.name, prefix + suffix)  # the language comes from the file name
    row = prefix.count("\n")
    col = len(prefix) - (prefix.rfind("\n") + 1)
    mode = syntax.mode(uri, row, col)
    mode = mode if mode != "none" else "single"  # asked explicitly: suggest even mid-word
    preset = engine.preset
    builder = PromptBuilder(preset.fim, preset.context_tokens, preset.max_new_tokens)
    lines = (prefix + suffix).split("\n")
    built = builder.build(uri, lines, row, col, syntax.context(uri, row, col))
    # An indentation-only line leaves its last blank out of the prompt (BPE merges it with the
    # next word); the completion must start with it, and it is not suggested again.
    stop = after_lead(syntax.stop_callback(uri, row, col, mode), built.lead)

    def finish(raw: str) -> str:
        rest = unlead(raw, built.lead)
        return "" if rest is None else syntax.trim(uri, row, col, rest, mode) or ""

    prompt = built.text

    return prompt, stop, finish
