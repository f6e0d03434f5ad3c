"""`spec-lsp bench fim`: fill-in-the-middle quality on HumanEval infilling, through the server's
own completion pipeline, with llama-server's `/infill` on the same problems as a peer.

Each problem's document (`opened`: prompt, the empty line of the hole, suffix), languageId python,
is opened in the `CompletionService` that `spec-lsp complete` uses (`inprocess.local_service`: a
local inference worker, the model loaded once for all problems, the server's default options but
`prefetch`, which a one-request document has no use for). The cursor is at the hole, the end of
`prompt`; the request is an explicitly invoked one (`complete(..., invoked=True)`: the first item
an editor gets, the whole greedy suggestion, never an early partial answer, so the figures do not
depend on the machine's speed). The answer is applied as an editor applies an inline item
(insertText over its range) and the resulting document is run against the problem's tests
(`fim_exec`).

Per problem: passed (pass@1, greedy), exact first line (the suggestion's first line, stripped,
equals the canonical solution's), tokens generated, latency (request to answer), whether the
suggestion and the hole span lines. llama-server rows (a binary from `make bench-peers` and a
GGUF given with `gguf`) send `input_prefix`/`input_suffix` to `/infill`, greedy, `cache_prompt`
off, the same max tokens; its raw output fills the hole in one row, its first line in another.
`drafting` sums the engine's drafting counters (acceptance on completion traffic).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import IO, Any
from urllib.error import HTTPError

from spec_lsp.benchmarks.fim_exec import Row, score
from spec_lsp.benchmarks.fim_problems import FimError, Problem, read_problems, widen
from spec_lsp.config import Options
from spec_lsp.stats import percentile


@dataclass(frozen=True)
class InlineEdit:
    """An inline completion item as the editor applies it: `text` replaces the document from
    `start` to `end`, 0-based (line, character) positions, characters as code points."""

    start: tuple[int, int]
    end: tuple[int, int]
    text: str


def opened(problem: Problem) -> str:
    """The document at the hole: a hole of whole lines (a prompt that ends a line, as all of
    HumanEval's) is the empty line the user is about to write, the cursor at its start."""
    prompt, suffix = problem["prompt"], problem["suffix"]
    return prompt + ("\n" if prompt.endswith("\n") else "") + suffix


def hole(prompt: str) -> tuple[int, int]:
    """The 0-based (line, character) position at the end of `prompt`."""
    return prompt.count("\n"), len(prompt) - (prompt.rfind("\n") + 1)


def inline_edit(text: str, line: int, character: int) -> InlineEdit:
    """The server's inline item at (line, character): insertText over an empty range (as
    `server.lsp_inline_item`; tests hold the two equal)."""
    return InlineEdit((line, character), (line, character), text)


def _offset(document: str, position: tuple[int, int]) -> int:
    line, character = position
    start = 0
    for _ in range(line):
        start = document.index("\n", start) + 1
    end = document.find("\n", start)
    return start + min(character, (len(document) if end < 0 else end) - start)


def apply_edit(document: str, edit: InlineEdit) -> str:
    start, end = _offset(document, edit.start), _offset(document, edit.end)
    return document[:start] + edit.text + document[end:]


def _judge(problem: Problem, text: str, tokens: int, ms: float, timeout_s: float) -> Row:
    """The row for suggestion `text` at the problem's hole, applied as the editor applies the
    server's inline item."""
    edit = inline_edit(text, *hole(problem["prompt"]))
    document = apply_edit(opened(problem), edit)
    return score(problem, document, edit.text, tokens, ms, timeout_s)


def summarize(rows: list[Row]) -> dict[str, Any]:
    """Aggregate figures, computed from the rows alone."""
    n = len(rows)
    latencies = sorted(r.latency_ms for r in rows)
    return {
        "problems": n,
        "passed": sum(r.passed for r in rows),
        "pass_at_1": round(sum(r.passed for r in rows) / n, 4) if n else 0.0,
        "exact_first_line": round(sum(r.exact_first_line for r in rows) / n, 4) if n else 0.0,
        "mean_tokens": round(sum(r.tokens for r in rows) / n, 2) if n else 0.0,
        "latency_p50_ms": round(percentile(latencies, 50), 1),
        "latency_p90_ms": round(percentile(latencies, 90), 1),
        "timeouts": sum(r.outcome == "timeout" for r in rows),
        "multi_line_suggestions": sum(r.multi_line for r in rows),
        "multi_line_holes": sum(r.hole_multi_line for r in rows),
        "empty_suggestions": sum(not r.completion for r in rows),
    }


def progress(log: IO[str], name: str, rows: list[Row], total: int) -> None:
    passed = sum(r.passed for r in rows)
    last = rows[-1]
    print(
        f"{name} {len(rows)}/{total} {last.task_id}: {last.outcome}, {last.tokens} tokens, "
        f"{last.latency_ms:.0f} ms; pass {passed}/{len(rows)} ({passed / len(rows):.1%})",
        file=log,
    )


# GenerationStats counters summed over the problems: acceptance measured on completion traffic.
DRAFT_COUNTS = ["generated_tokens", "target_forwards", "proposed_tokens", "accepted_tokens"]
DRAFT_COUNTS += ["draft_rounds", "gated_rounds", "draft_forwards"]


async def _spec_lsp_rows(
    problems: list[Problem], options: Options, timeout_s: float, log: IO[str]
) -> tuple[list[Row], dict[str, Any]]:
    """One row per problem from the server's pipeline, the model loaded once; and its info."""
    from spec_lsp.inprocess import LastResultBackend, local_service

    recorder = LastResultBackend()

    def say(message: str, _fraction: float) -> None:
        print(message, file=log)

    rows: list[Row] = []
    drafting: dict[str, float] = dict.fromkeys(DRAFT_COUNTS, 0)  # drafting on real traffic
    async with local_service(options, recorder, say) as (service, info, error):
        if service is None:
            raise FimError(f"the model did not load: {error}")
        for n, problem in enumerate(problems):
            uri = f"file:///spec-lsp-fim/{n}/{problem['task_id'].replace('/', '_')}.py"
            line, character = hole(problem["prompt"])
            service.did_open(uri, "python", 1, opened(problem))
            recorder.last = None  # an answer from a cache generates nothing
            start = time.perf_counter()
            suggestion = await service.complete(uri, line, character, "utf-32", invoked=True)
            ms = (time.perf_counter() - start) * 1000
            service.did_close(uri)  # no other problem's code in the next prompt
            text = "" if suggestion is None else suggestion.text
            tokens = recorder.last.stats.generated_tokens if recorder.last is not None else 0
            if recorder.last is not None:
                for key in DRAFT_COUNTS:
                    drafting[key] += int(getattr(recorder.last.stats, key, 0) or 0)
            rows.append(await asyncio.to_thread(_judge, problem, text, tokens, ms, timeout_s))
            progress(log, "spec-lsp", rows, len(problems))
        proposed = drafting["proposed_tokens"]
        drafting["acceptance"] = round(drafting["accepted_tokens"] / proposed, 3) if proposed else 0
        about = {"preset": info.preset, "device": info.device, "drafting": drafting}
    return rows, about


def _infill(url: str, problem: Problem, max_tokens: int) -> tuple[str, int, float]:
    """llama-server's greedy `/infill` for the problem's hole: (text, tokens, ms)."""
    from spec_lsp.benchmarks.llama_cpp import _post

    body = {
        "input_prefix": problem["prompt"],
        "input_suffix": problem["suffix"],
        "n_predict": max_tokens,
        "temperature": 0,
        "top_k": 1,
        "cache_prompt": False,
    }
    start = time.perf_counter()
    out = _post(f"{url}/infill", body)
    ms = (time.perf_counter() - start) * 1000
    tokens = int(out.get("tokens_predicted", out.get("timings", {}).get("predicted_n", 0)))
    return str(out.get("content", "")), tokens, ms


def _llama_rows(
    problems: list[Problem],
    gguf: Path,
    threads: int,
    max_tokens: int,
    timeout_s: float,
    log: IO[str],
) -> dict[str, list[Row]]:
    """`llama_server_infill` (its raw output as the hole) and `llama_server_first_line` (its first
    line and a newline) rows, or none without a binary or when the server fails."""
    from spec_lsp.benchmarks.llama_cpp import running, server_binary

    binary = server_binary()
    if binary is None:
        print("llama-server: skipped (no binary; `make bench-peers` builds one)", file=log)
        return {}
    raw: list[Row] = []
    first: list[Row] = []
    try:
        with running(binary, gguf, threads, []) as url:
            _infill(url, problems[0], 4)  # a warm-up, as the local engine has at its load
            for problem in problems:
                text, tokens, ms = _infill(url, problem, max_tokens)
                cut = text.split("\n", 1)[0] + "\n"
                raw.append(_judge(problem, text, tokens, ms, timeout_s))
                first.append(_judge(problem, cut, tokens, ms, timeout_s))
                progress(log, "llama-server", raw, len(problems))
    except (OSError, RuntimeError) as exc:  # urllib's HTTPError is an OSError
        said = exc.read().decode(errors="replace")[:300] if isinstance(exc, HTTPError) else ""
        print(f"llama-server: failed ({exc} {said}); its rows are left out", file=log)
        return {}
    return {"llama_server_infill": raw, "llama_server_first_line": first}


def _options(preset: str | None, device: str, max_tokens: int) -> Options:
    """The server's default options with these; `prefetch` off (one request per document);
    `max_tokens` caps every answer, a whole block's too (the block rule's ends still apply).
    Raises FimError for an unknown or broken preset before anything loads."""
    from spec_lsp.presets import PresetError, load_preset

    block_tokens = min(Options.block_tokens, max_tokens)
    options = Options(
        device=device, max_tokens=max_tokens, prefetch=False, block_tokens=block_tokens
    )
    options = options if preset is None else replace(options, preset=preset)
    try:
        load_preset(options.preset)
    except PresetError as exc:
        raise FimError(str(exc)) from exc
    return options


def run_fim(
    data: Path,
    preset: str | None = None,
    gguf: Path | None = None,
    *,
    limit: int | None = None,
    offset: int = 0,
    widen_to: int = 1,
    max_tokens: int = Options.max_tokens,
    timeout_s: float = 10.0,
    llama_server: str = "auto",
    threads: int | None = None,
    device: str = "auto",
    log: IO[str] = sys.stderr,
) -> dict[str, Any]:
    """The whole report: figures per mode and a row per problem per mode. `preset`: the server's
    default when None; `gguf`: the file llama-server serves for its rows (none: no such rows);
    `llama_server`: "auto" (rows when a binary and `gguf` exist) or "off"; `widen_to`: holes
    grown to up to that many lines (`widen`). Raises FimError."""
    if widen_to < 1:
        raise FimError(f"a hole spans at least one line (widen {widen_to})")
    problems = [widen(p, widen_to) for p in read_problems(data, offset, limit)]
    if not problems:
        raise FimError(f"{data}: no problems at offset {offset}")
    options = _options(preset, device, max_tokens)
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    rows, about = asyncio.run(_spec_lsp_rows(problems, options, timeout_s, log))
    modes = {"spec_lsp": rows}
    if llama_server == "auto" and gguf is None:
        print("llama-server: skipped (no GGUF given; pass --gguf PATH)", file=log)
    elif llama_server == "auto" and gguf is not None:
        n = threads or torch.get_num_threads()
        modes.update(_llama_rows(problems, gguf, n, max_tokens, timeout_s, log))
    return {
        "data": str(data),
        **about,
        "offset": offset,
        "widen_to": widen_to,
        "max_tokens": max_tokens,
        "timeout_s": timeout_s,
        "threads": threads or torch.get_num_threads(),
        "gguf": None if gguf is None else str(gguf),
        "modes": {name: summarize(mode_rows) for name, mode_rows in modes.items()},
        "rows": {name: [asdict(r) for r in mode_rows] for name, mode_rows in modes.items()},
    }


COLUMNS = (  # title, figure, format
    ("pass@1", "pass_at_1", "{:.1%}"),
    ("exact line 1", "exact_first_line", "{:.1%}"),
    ("tokens", "mean_tokens", "{:.1f}"),
    ("p50 ms", "latency_p50_ms", "{:.0f}"),
    ("p90 ms", "latency_p90_ms", "{:.0f}"),
    ("passed", "passed", "{}"),
    ("of", "problems", "{}"),
    ("timeouts", "timeouts", "{}"),
    ("multi-line", "multi_line_suggestions", "{}"),
)


def table(report: dict[str, Any]) -> str:
    """The report's figures, one row per mode."""
    width = max(map(len, report["modes"]), default=4) + 2
    head = f"{'mode':<{width}}" + "".join(f"{title:>13}" for title, _, _ in COLUMNS)
    lines = [
        f"fim: {report['data']} ({report['preset']}, {report['device']}, "
        f"max {report['max_tokens']} tokens, {report['threads']} threads)",
        head,
    ]
    for name, figures in report["modes"].items():
        cells = "".join(f"{fmt.format(figures[key]):>13}" for _, key, fmt in COLUMNS)
        lines.append(f"{name:<{width}}{cells}")
    rows = report["rows"]["spec_lsp"]
    holes = sum(r["hole_multi_line"] for r in rows)
    lines.append(f"holes spanning lines: {holes} of {len(rows)}")
    return "\n".join(lines)


def main(
    data: Path,
    preset: str | None = None,
    gguf: Path | None = None,
    json_path: str | None = None,
    **kwargs: Any,
) -> int:
    """Runs the bench, prints its table, writes the JSON report when asked; 1 on a FimError."""
    return finish(lambda: run_fim(data, preset, gguf, **kwargs), json_path)


def finish(make: Callable[[], dict[str, Any]], json_path: str | None) -> int:
    """The report `make()` returns: its table printed, its JSON written when asked; 1 on a
    FimError (what is wrong, on stderr)."""
    try:
        report = make()
    except FimError as exc:
        print(f"spec-lsp: {exc}", file=sys.stderr)
        return 1
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(table(report))
    if report.get("drafting"):
        print("drafting over the problems:", report["drafting"])
    return 0
