"""Cheaper drafts, measured before they are built (issue 38 item 3): counts along the target's
greedy continuation of the bench prompts, and one-thread CPU time of the passes' pieces.

    python -m spec_lsp.benchmarks.draft_study --preset coder --prompts 4 --steps 48

For each prompt the target decodes greedily; at every position the study records, beside the
target's top-1, the top-1 and its probability of
- the target's own first L layers (early exit: layers 0 .. L - 1, then the final norm and the output
  layer; those layers' keys and values are the target's own, `LeanDecoder.run_layers`), for each L
  of `--exits`;
- the preset's draft model, fed the same tokens (its forward and output vocabulary as the engine
  runs it).
`draft_projection` turns those records and the measured costs into acceptance, expected accepted
runs for k = 1 .. 8, and the projected speedup over the target alone. Early exit is projected two
ways: the verification pass runs every layer over its rows ("plain"), or starts the drafted rows
at layer L from the stream the draft left ("reuse": layers 0 .. L - 1 run for one row only).
Needs a preset whose target runs the lean forward.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from spec_lsp.benchmarks.draft_projection import (
    Costs,
    Track,
    agreement,
    best,
    iid_speedup,
    mean_run,
)
from spec_lsp.engine.lean import LeanDecoder

ALPHAS = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95]  # the acceptance a draft would need ...
STEPS = [0.0, 0.05, 0.1, 0.2, 0.3, 0.5]  # ... at this cost of a step (one-row passes)
THRESHOLDS = [0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
KS = range(1, 9)
Top = tuple[int, float]  # a top-1 token and its probability


def _top(logits: torch.Tensor) -> Top:
    probs = logits.float().softmax(-1)
    p, i = probs.max(-1)
    return int(i), float(p)


@torch.inference_mode()
def traced_step(target: LeanDecoder, cache: Any, token: int, exits: list[int]) -> dict[int, Top]:
    """Feeds one token through every layer, reading the output layer after each exit too:
    {L: (top-1, probability)}, with L = the number of layers for the target itself."""
    start, last = cache.length, len(target.layers)
    cache.reserve(start + 1)
    h = target.embed_ids([token])
    tops, done = {}, 0
    for stop in [*sorted(e for e in exits if e < last), last]:
        h = target.run_layers(h, cache, start, range(done, stop))
        tops[stop], done = _top(target.output(h)[0]), stop
    cache.length = start + 1
    target.passes += 1
    return tops


@torch.inference_mode()
def trace_prompt(
    target: LeanDecoder, draft: Any, ids: list[int], steps: int, exits: list[int], stop: set[int]
) -> dict[str, Any]:
    """The records of one prompt: the target's greedy tokens, each exit's and the draft's tops."""
    cache = target.new_cache()
    target.forward(ids[:-1], cache)
    draft_cache = None
    if draft is not None:
        draft_cache = draft.new_cache()
        draft.forward(ids[:-1], draft_cache)
    greedy: list[int] = []
    tops: dict[str, list[Top]] = {str(e): [] for e in exits}
    tops["draft"] = []
    token = ids[-1]
    for _ in range(steps):
        step = traced_step(target, cache, token, exits)
        for e in exits:
            tops[str(e)].append(step[e])
        if draft is not None:
            tops["draft"].append(_top(draft.forward([token], draft_cache)[0][-1]))
        token = step[len(target.layers)][0]
        greedy.append(token)
        if token in stop:
            break
    return {"greedy": greedy, "tops": tops}


def tracks_of(traces: list[dict[str, Any]], name: str) -> list[Track]:
    out = []
    for trace in traces:
        tops = trace["tops"][name]
        match = tuple(t[0] == g for t, g in zip(tops, trace["greedy"], strict=True))
        out.append(Track(match, tuple(t[1] for t in tops)))
    return out


def _best_ms(run: Callable[[], object], reps: int, clock: Callable[[], float]) -> float:
    best_s = float("inf")
    for _ in range(reps):
        t = clock()
        run()
        best_s = min(best_s, clock() - t)
    return best_s * 1000


@torch.inference_mode()
def piece_costs(
    target: LeanDecoder, rows: int, exits: list[int], context: int, reps: int, clock: Any
) -> dict[str, Any]:
    """ms of: a whole pass over r rows (r = 1 .. rows), layers 0 .. L - 1 over r rows, and the
    final norm with the output layer over one row; after `context` cached tokens."""
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, target.vocab_size, (context + rows,), generator=gen).tolist()
    cache = target.new_cache()
    target.forward(ids[:context], cache)
    cache.reserve(context + rows)
    full: list[float] = []
    prefix: dict[int, list[float]] = {e: [] for e in exits}

    def whole(r: int) -> None:
        target.forward(ids[context : context + r], cache, keep=r)
        cache.crop(-r)

    for r in range(1, rows + 1):
        full.append(_best_ms(lambda r=r: whole(r), reps, clock))  # type: ignore[misc]
        h = target.embed_ids(ids[context : context + r])
        for e in exits:
            run = lambda e=e, h=h: target.run_layers(h, cache, context, range(e))  # noqa: E731
            prefix[e].append(_best_ms(run, reps, clock))
    h1 = target.embed_ids(ids[context : context + 1])
    output = _best_ms(lambda: target.output(h1), reps, clock)
    return {"full": full, "prefix": {str(e): v for e, v in prefix.items()}, "output": output}


def exit_costs(pieces: dict[str, Any], exit_layers: int) -> tuple[Costs, Costs]:
    """(plain, reuse) costs of drafting with the first `exit_layers` layers."""
    full, prefix = pieces["full"], pieces["prefix"][str(exit_layers)]
    step = prefix[0] + pieces["output"]
    reuse = tuple(f - p + prefix[0] for f, p in zip(full, prefix, strict=True))
    return Costs(tuple(full), step), Costs((full[0], *reuse[1:]), step)


def _summary(tracks: list[Track], costs: list[Costs]) -> dict[str, Any]:
    """A draft's agreement, expected runs for k = 1 .. 8, and its best projection per cost."""
    share = {str(th): agreement(tracks, th) for th in THRESHOLDS}
    per_threshold = [best(tracks, costs[0], KS, [th]) for th in THRESHOLDS]
    return {
        "agreement": agreement(tracks)[1],
        "positions": sum(len(t.match) for t in tracks),
        "mean_run": [round(mean_run(tracks, k), 3) for k in KS],
        "by_threshold": {
            str(th): {"share": s, "agreement": a, "best": vars(p)}
            for (th, (s, a)), p in zip(share.items(), per_threshold, strict=True)
        },
        "best": [vars(best(tracks, c, KS, THRESHOLDS)) for c in costs],
        "step_ms": costs[0].draft_step,
    }


def summarize(
    traces: list[dict[str, Any]], pieces: dict[str, Any], draft_ms: float | None, exits: list[int]
) -> dict[str, Any]:
    out: dict[str, Any] = {"exits": {}}
    for e in exits:
        out["exits"][str(e)] = _summary(tracks_of(traces, str(e)), list(exit_costs(pieces, e)))
    if draft_ms is not None:
        out["draft"] = _summary(
            tracks_of(traces, "draft"), [Costs(tuple(pieces["full"]), draft_ms)]
        )
    return out


def _fmt_best(p: dict[str, Any]) -> str:
    return f"{p['speedup']:.2f}x (k {p['k']}, >= {p['threshold']})"


def tables(report: dict[str, Any]) -> list[str]:
    """Markdown: one row per exit and the draft model; then the draft model by threshold."""
    one = report["pieces"]["full"][0]
    head = "| draft | step / pass | top-1 agreement | " + " | ".join(f"run k={k}" for k in KS)
    lines = [head + " | best, plain | best, reuse |", "| --- " * (len(KS) + 5) + "|"]
    rows = [(f"layers 0-{int(e) - 1}", s) for e, s in report["summary"]["exits"].items()]
    if "draft" in report["summary"]:
        rows.append(("draft model", report["summary"]["draft"]))
    for name, s in rows:
        runs = " | ".join(f"{r:.2f}" for r in s["mean_run"])
        reuse = _fmt_best(s["best"][1]) if len(s["best"]) > 1 else "-"
        lines.append(
            f"| {name} | {s['step_ms'] / one:.2f} | {s['agreement']:.3f} | {runs} | "
            f"{_fmt_best(s['best'][0])} | {reuse} |"
        )
    if "draft" in report["summary"]:
        lines += ["", "| draft model, threshold | share of positions | agreement | best |"]
        lines.append("| --- | --- | --- | --- |")
        for th, row in report["summary"]["draft"]["by_threshold"].items():
            lines.append(
                f"| {th} | {row['share']:.3f} | {row['agreement']:.3f} | {_fmt_best(row['best'])} |"
            )
    return lines


def study(
    target: LeanDecoder,
    draft: Any,
    prompts: list[list[int]],
    steps: int,
    exits: list[int],
    stop: set[int],
    cost_context: int = 256,
    reps: int = 3,
) -> dict[str, Any]:
    """Traces every prompt, measures the pieces (one thread, CPU time), and summarizes."""
    traces = [trace_prompt(target, draft, ids, steps, exits, stop) for ids in prompts]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        pieces = piece_costs(target, max(KS) + 1, exits, cost_context, reps, time.thread_time)
        draft_ms = None
        if draft is not None:
            from spec_lsp.engine.timing import pass_costs

            draft_ms = pass_costs(draft, 1, cost_context, reps, time.thread_time)[0]
    finally:
        torch.set_num_threads(threads)
    return {
        "pieces": pieces,
        "draft_step_ms": draft_ms,
        "summary": summarize(traces, pieces, draft_ms, exits),
        "traces": traces,
    }


def requirements(verify: list[float]) -> list[str]:
    """Markdown: the best projected speedup of an independent-acceptance draft, by its per-token
    acceptance (rows) and the cost of its step (columns), over this verify curve."""
    ratios = tuple(v / verify[0] for v in verify)
    lines = ["| acceptance \\ step / pass | " + " | ".join(f"{s:g}" for s in STEPS) + " |"]
    lines.append("| --- " * (len(STEPS) + 1) + "|")
    for alpha in ALPHAS:
        cells = (iid_speedup(alpha, step, ratios) for step in STEPS)
        lines.append(f"| {alpha:g} | " + " | ".join(f"{x:.2f}x (k {k})" for x, k in cells) + " |")
    return lines


def on_curve(report: dict[str, Any], curve_json: str, context: str) -> None:
    """Takes the verify pass's ratios from a `bench verify-cost` report (after `context` tokens)
    over this run's one-row pass, and summarizes again."""
    ratios = json.loads(Path(curve_json).read_text())["ratio"][context]
    pieces = report["pieces"]
    rows = len(pieces["full"])
    if len(ratios) < rows:
        raise SystemExit(f"{curve_json}: {len(ratios)} rows, the study needs {rows}")
    pieces["full"] = [pieces["full"][0] * r for r in ratios[:rows]]
    pieces["curve"] = f"{curve_json} after {context} tokens"
    exits = [int(e) for e in pieces["prefix"]]
    report["summary"] = summarize(report["traces"], pieces, report["draft_step_ms"], exits)


def session_prompts(paths: list[str], preset: str, count: int) -> list[str]:
    """`count` of the prompts the server builds for the recorded sessions' requests (FIM, the
    window and context a request gets: `prompt_churn`), evenly spread over them."""
    import asyncio

    from spec_lsp.benchmarks.prompt_churn import measure
    from spec_lsp.config import Options
    from spec_lsp.presets import load_preset
    from spec_lsp.replay.format import read_session
    from spec_lsp.worker import ModelInfo

    p = load_preset(preset)
    info = ModelInfo(preset=p.name, fim=p.fim, context_tokens=p.context_tokens)
    options = Options(prefetch=False, partial_ms=0, short_window=0)
    recorded = asyncio.run(measure([read_session(x) for x in paths], info, options, None))
    step = max(1, len(recorded) // max(1, count))
    return [prompt for _, prompt in recorded[step - 1 :: step]][:count]


def measured(args: argparse.Namespace) -> dict[str, Any]:
    """Loads the preset and runs the study."""
    from spec_lsp.benchmarks.prompts import bench_prompts
    from spec_lsp.benchmarks.verify_cost import cpu_name
    from spec_lsp.presets import load_preset_engine

    engine = load_preset_engine(args.preset, device="cpu", random_weights=args.random_weights)
    target = engine.forwards.target
    if not isinstance(target, LeanDecoder):
        raise SystemExit(f"{args.preset}: the target runs {target.name}, not the lean forward")
    exits = [int(e) for e in args.exits.split(",")]
    texts = [p.text for p in bench_prompts(args.prompts)]
    if args.sessions:
        texts = session_prompts(args.sessions, args.preset, args.prompts)
    prompts = [engine.encode(text)[-args.context :] for text in texts]
    stop = set(engine.eos_ids)
    report = study(target, engine.forwards.draft, prompts, args.steps, exits, stop, reps=args.reps)
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    report.update(preset=args.preset, cpu=cpu_name(), kernels=engine.kernels, date=date)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--preset", default="coder")
    parser.add_argument("--prompts", type=int, default=4, help="bench prompts")
    parser.add_argument("--steps", type=int, default=48, help="greedy tokens per prompt")
    parser.add_argument("--exits", default="6,8,12,16", help="early exits (layers run)")
    parser.add_argument("--context", type=int, default=1024, help="prompt tokens kept")
    parser.add_argument("--reps", type=int, default=3, help="timings: best of")
    parser.add_argument("--sessions", nargs="+", help="replay sessions: their requests' prompts")
    parser.add_argument("--random-weights", action="store_true", help="a smoke run")
    parser.add_argument("--json", help="write the report (with the traces) here")
    parser.add_argument("--from-json", help="project again from a report this command wrote")
    parser.add_argument("--verify-curve", help="a `bench verify-cost --json` report to price with")
    parser.add_argument("--verify-context", default="200", help="its context length to use")
    args = parser.parse_args(argv)
    report = json.loads(Path(args.from_json).read_text()) if args.from_json else measured(args)
    if args.verify_curve:
        on_curve(report, args.verify_curve, args.verify_context)
    pieces = report["pieces"]
    print(
        f"{report['preset']}, kernels {report['kernels']}, {report['cpu']}, {report['date']}; "
        f"one pass of one row {pieces['full'][0]:.1f} ms (one thread, CPU time); verify curve "
        f"{pieces.get('curve', 'this run')}: "
        + " ".join(f"{f / pieces['full'][0]:.2f}" for f in pieces["full"])
    )
    print("\n".join(tables(report)))
    print("\nA draft of independent acceptance on this curve: best speedup (its k)")
    print("\n".join(requirements(pieces["full"])))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
