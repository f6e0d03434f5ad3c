"""`spec-lsp bench blocks`: whole blocks on multi-line holes, through the server's completion
path, before and after the whole-block rule, beside llama-server's `/infill`.

The holes (`blocks_holes`): HumanEval's single-line problems widened to their enclosing block,
and blocks cut with tree-sitter from the standard library, judged by their own tests. Each hole's
document is opened in the in-process `CompletionService` (`inprocess.local_service`: the model
loaded once, the server's options but `prefetch`), the cursor at the start of the hole's empty
line, and asked once per mode with an explicit request (Invoked), as a new user who asks for a
suggestion would: `before` with `blockTokens` 0 (every request capped at `maxTokens`, the block's
end unknown at column 0), `after` with the rule on. The modes run back to back on each hole, so
the second reuses the prompt's KV; each answers for itself (the document's last suggestion is
forgotten between them). llama-server's row sends the same prefix and suffix to `/infill`
(greedy, `cache_prompt` off, `n_predict` 128 by default) and inserts its raw output.

Per hole and mode a `fim_exec.Row`; per set and mode pass@1 and why the failures failed: shorter
than the hole (fewer lines than the hole's own), stopped by the cap, ending on a block header.
Each row is also logged as it is judged (a `row {json}` line), so a run cut short keeps them.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import IO, Any

from spec_lsp.benchmarks.blocks_holes import Hole, humaneval_holes, stdlib_holes
from spec_lsp.benchmarks.fim import DRAFT_COUNTS, _infill, hole, progress, summarize
from spec_lsp.benchmarks.fim_exec import Row, first_line, spans_lines
from spec_lsp.benchmarks.fim_problems import FimError
from spec_lsp.config import Options

LLAMA_TOKENS = 128  # the peer: llama-server's raw `/infill` with 128 tokens


def row(hole: Hole, text: str, tokens: int, ms: float, timeout_s: float) -> Row:
    """The hole's row for suggestion `text`, inserted at the cursor as an editor inserts it."""
    outcome = hole.judge(text, timeout_s)
    return Row(
        task_id=hole.name,
        passed=outcome.passed,
        outcome=outcome.reason,
        exact_first_line=first_line(text) == first_line(hole.solution),
        tokens=tokens,
        latency_ms=round(ms, 1),
        multi_line=spans_lines(text),
        hole_multi_line=spans_lines(hole.solution),
        completion=text,
        detail=outcome.detail,
    )


def failures(rows: list[Row], holes: list[Hole], cap: int) -> dict[str, int]:
    """Why the failures failed: fewer lines than the hole's, the cap reached, a last line that
    opens a block (a header without its body)."""
    lines = {h.name: h.solution.rstrip("\n").count("\n") + 1 for h in holes}
    failed = [r for r in rows if not r.passed]
    return {
        "failed": len(failed),
        "shorter_than_hole": sum(
            len(r.completion.rstrip().split("\n")) < lines[r.task_id] for r in failed
        ),
        "at_cap": sum(r.tokens >= cap for r in failed),
        "ends_on_header": sum(r.completion.rstrip().endswith(":") for r in failed),
    }


async def _spec_lsp_rows(
    holes: list[Hole], modes: dict[str, Options], timeout_s: float, log: IO[str]
) -> tuple[dict[str, list[Row]], dict[str, Any]]:
    """Rows per mode from the server's pipeline, the model loaded once; and its info."""
    from spec_lsp.inprocess import LastResultBackend, local_service

    recorder = LastResultBackend()
    rows: dict[str, list[Row]] = {mode: [] for mode in modes}
    drafting: dict[str, float] = dict.fromkeys(DRAFT_COUNTS, 0)
    first = next(iter(modes.values()))
    async with local_service(first, recorder, lambda m, _f: print(m, file=log)) as (
        service,
        info,
        error,
    ):
        if service is None:
            raise FimError(f"the model did not load: {error}")
        for n, h in enumerate(holes):
            uri = f"file:///spec-lsp-blocks/{n}/{h.name.replace('/', '_').replace(':', '_')}.py"
            line, character = hole(h.prompt)
            service.did_open(uri, "python", 1, h.document())
            for mode, options in modes.items():
                service.set_options(options)
                service.reuse.forget(uri)  # not answered from the other mode's suggestion
                recorder.last = None
                start = time.perf_counter()
                suggestion = await service.complete(uri, line, character, "utf-32", invoked=True)
                ms = (time.perf_counter() - start) * 1000
                text = "" if suggestion is None else suggestion.text
                stats = None if recorder.last is None else recorder.last.stats
                for key in DRAFT_COUNTS:
                    drafting[key] += int(getattr(stats, key, 0) or 0)
                tokens = 0 if stats is None else stats.generated_tokens
                rows[mode].append(await asyncio.to_thread(row, h, text, tokens, ms, timeout_s))
                progress(log, mode, rows[mode], len(holes))
                print("row", json.dumps({"mode": mode, **asdict(rows[mode][-1])}), file=log)
            service.did_close(uri)
        about = {"preset": info.preset, "device": info.device, "drafting": drafting}
    return rows, about


def _llama_rows(
    holes: list[Hole], gguf: Path, threads: int, n_predict: int, timeout_s: float, log: IO[str]
) -> list[Row]:
    """llama-server's raw `/infill` output at each hole; none without a binary or on failure."""
    from spec_lsp.benchmarks.llama_cpp import running, server_binary

    binary = server_binary()
    if binary is None:
        print("llama-server: skipped (no binary; `make bench-peers` builds one)", file=log)
        return []
    rows: list[Row] = []
    try:
        with running(binary, gguf, threads, []) as url:
            _infill(url, {"prompt": holes[0].prompt, "suffix": holes[0].suffix}, 4)  # warm-up
            for h in holes:
                text, tokens, ms = _infill(url, {"prompt": h.prompt, "suffix": h.suffix}, n_predict)
                rows.append(row(h, text, tokens, ms, timeout_s))
                progress(log, "llama-server", rows, len(holes))
                print("row", json.dumps({"mode": "llama", **asdict(rows[-1])}), file=log)
    except (OSError, RuntimeError) as exc:
        print(f"llama-server: failed ({exc}); its rows are left out", file=log)
        return []
    return rows


def run_blocks(
    data: Path,
    preset: str | None = None,
    gguf: Path | None = None,
    *,
    humaneval: int = 30,
    stdlib: int = 20,
    max_tokens: int = Options.max_tokens,
    block_tokens: int = Options.block_tokens,
    llama_tokens: int = LLAMA_TOKENS,
    timeout_s: float = 60.0,
    llama_server: str = "auto",
    threads: int | None = None,
    device: str = "auto",
    modes: tuple[str, ...] = ("before", "after"),
    log: IO[str] = sys.stderr,
) -> dict[str, Any]:
    """The whole report: figures per set and mode, a row per hole per mode (`modes`: which of
    the server's, none for llama-server's rows alone). Raises FimError."""
    holes = _holes(data, humaneval, stdlib, timeout_s, log)
    base = _options(preset, device, max_tokens)
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    options = {
        "before": replace(base, block_tokens=0),
        "after": replace(base, block_tokens=block_tokens),
    }
    rows: dict[str, list[Row]] = {}
    about: dict[str, Any] = {"preset": base.preset, "device": device, "drafting": {}}
    if chosen := {mode: options[mode] for mode in modes}:
        rows, about = asyncio.run(_spec_lsp_rows(holes, chosen, timeout_s, log))
    caps = {"before": max_tokens, "after": max(block_tokens, max_tokens)}
    if llama_server == "auto" and gguf is not None:
        n = threads or torch.get_num_threads()
        if peer := _llama_rows(holes, gguf, n, llama_tokens, timeout_s, log):
            rows["llama_server_infill"], caps["llama_server_infill"] = peer, llama_tokens
    elif llama_server == "auto":
        print("llama-server: skipped (no GGUF given; pass --gguf PATH)", file=log)
    return {
        "data": str(data),
        **about,
        "max_tokens": max_tokens,
        "block_tokens": block_tokens,
        "llama_tokens": llama_tokens,
        "threads": threads or torch.get_num_threads(),
        "holes": [{"name": h.name, "kind": h.kind, "lines": h.solution.count("\n")} for h in holes],
        "sets": _figures(holes, rows, caps),
        "rows": {mode: [asdict(r) for r in mode_rows] for mode, mode_rows in rows.items()},
    }


def _holes(data: Path, humaneval: int, stdlib: int, timeout_s: float, log: IO[str]) -> list[Hole]:
    """The set: `humaneval` widened HumanEval holes, then `stdlib` standard library ones (the
    latter's choice cached in ~/.cache/spec-lsp)."""
    holes = humaneval_holes(data, humaneval) if humaneval > 0 else []
    if stdlib > 0:
        cache = Path.home() / ".cache" / "spec-lsp" / "bench-blocks-stdlib.json"
        holes += stdlib_holes(stdlib, timeout_s=timeout_s, say=_printer(log), cache=cache)
    if not holes:
        raise FimError("no holes: --humaneval and --stdlib are both 0")
    return holes


def _options(preset: str | None, device: str, max_tokens: int) -> Options:
    """The server's options for the bench: `prefetch` off (one request per document), no short
    window (the answer is the full window's, as once a file's window is warm)."""
    from spec_lsp.presets import PresetError, load_preset

    base = Options(device=device, max_tokens=max_tokens, prefetch=False, short_window=0)
    base = base if preset is None else replace(base, preset=preset)
    try:
        load_preset(base.preset)
    except PresetError as exc:
        raise FimError(str(exc)) from exc
    return base


def _printer(log: IO[str]) -> Callable[[str], None]:
    return lambda message: print(message, file=log)


def _figures(
    holes: list[Hole], rows: dict[str, list[Row]], caps: dict[str, int]
) -> dict[str, dict[str, Any]]:
    """Per set (humaneval, stdlib, all) and mode: `fim.summarize`'s figures and `failures`."""
    sets = {"humaneval": ("humaneval",), "stdlib": ("stdlib-body", "stdlib-tail")}
    sets["all"] = sets["humaneval"] + sets["stdlib"]
    out: dict[str, dict[str, Any]] = {}
    for name, kinds in sets.items():
        chosen = [i for i, h in enumerate(holes) if h.kind in kinds]
        if not chosen:
            continue
        subset = [holes[i] for i in chosen]
        out[name] = {
            mode: {**summarize(picked), **failures(picked, subset, caps[mode])}
            for mode, mode_rows in rows.items()
            if (picked := [mode_rows[i] for i in chosen])
        }
    return out


COLUMNS = (  # title, figure, format
    ("pass@1", "pass_at_1", "{:.1%}"),
    ("passed", "passed", "{}"),
    ("of", "problems", "{}"),
    ("shorter", "shorter_than_hole", "{}"),
    ("at cap", "at_cap", "{}"),
    ("header", "ends_on_header", "{}"),
    ("tokens", "mean_tokens", "{:.1f}"),
    ("p50 ms", "latency_p50_ms", "{:.0f}"),
)


def table(report: dict[str, Any]) -> str:
    """The report's figures, one row per set and mode."""
    head = f"{'set':<11}{'mode':<21}" + "".join(f"{title:>9}" for title, _, _ in COLUMNS)
    lines = [
        f"blocks: {len(report['holes'])} holes ({report['preset']}, {report['device']}, "
        f"maxTokens {report['max_tokens']}, blockTokens {report['block_tokens']}, "
        f"llama-server n_predict {report['llama_tokens']}, {report['threads']} threads)",
        head,
    ]
    for name, modes in report["sets"].items():
        for mode, figures in modes.items():
            cells = "".join(f"{fmt.format(figures[key]):>9}" for _, key, fmt in COLUMNS)
            lines.append(f"{name:<11}{mode:<21}{cells}")
    return "\n".join(lines)


def main(data: Path, json_path: str | None = None, **kwargs: Any) -> int:
    """Runs the bench, prints its table, writes the JSON report when asked; 1 on a FimError
    (what is wrong, on stderr)."""
    try:
        report = run_blocks(data, **kwargs)
    except FimError as exc:
        print(f"spec-lsp: {exc}", file=sys.stderr)
        return 1
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(table(report))
    print("drafting over the requests:", report["drafting"])
    return 0
