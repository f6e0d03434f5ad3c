"""`python -m spec_lsp.benchmarks.copy_index`: the copy index against plain prompt lookup, counted.

Decodes each bench prompt once with the preset's target alone: its greedy output is what every
speculative mode emits, token for token. Then replays the "ngram" source's rounds against that
output without running the target: each round's drafts (the engine's own drafter and gate), the
tokens the target accepts (the longest prefix of the drafts equal to its output, then one of its
own) and the pass's rows. So the figures count tokens, not seconds, and do not depend on the CPU
or on what else runs on it: tokens per target pass, acceptance, and the speedup over the target
alone that the measured verify-cost curve predicts (one cost[0] per token against cost[rows - 1]
per pass). A model draft ("both") is not replayed: it needs the draft model's passes.

Scenarios: `cold` (each prompt alone, no document: the context's own text only, as `bench
engine` runs), `stream` (the prompts as documents of one session, in order: the index shares
each one's window and output with the next), `follow` (each prompt again after its answer's first
line was typed: the document's earlier output in the index), and with `--records`, `replay`: the
generations a server ran in a recorded replay, in their order (one JSON object a line: `doc`,
`short`, `max_new`, `prompt` and `output` token ids; warm-ups, of one token, are left out).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from spec_lsp.benchmarks.engine_bench import run_engine_mode
from spec_lsp.benchmarks.prompts import BenchPrompt, bench_prompts
from spec_lsp.engine.api import GenerationRequest, GenerationStats
from spec_lsp.engine.copyindex import LEAD, CopyIndex
from spec_lsp.engine.engine import SpecEngine
from spec_lsp.engine.gate import Gates, plan_round, record

Case = tuple[str | None, list[int], list[int]]  # (document, prompt tokens, the target's output)


@dataclass
class Counts:
    tokens: int = 0  # decoded after the first (which the prefill gives)
    passes: int = 0
    proposed: int = 0
    accepted: int = 0
    cost: float = 0.0  # the passes' modelled time (verify-cost curve)
    plain: float = 0.0  # the target alone's: cost[0] per token

    def row(self) -> dict[str, float | None]:
        return {
            "tokens_per_pass": round(self.tokens / self.passes, 3) if self.passes else None,
            "acceptance": round(self.accepted / self.proposed, 3) if self.proposed else None,
            "proposed_per_pass": round(self.proposed / self.passes, 2) if self.passes else None,
            "modelled_speedup": round(self.plain / self.cost, 3) if self.cost else None,
        }


def replay(engine: SpecEngine, cases: list[Case], max_new: int) -> Counts:
    """The "ngram" source's rounds over `cases`, in order, against the target's outputs."""
    counts, curve = Counts(), engine.options.verify_cost
    for doc, prompt, output in cases:
        req = GenerationRequest("", doc_id=doc, max_new_tokens=max_new, method="ngram")
        sources = engine._sources(req, "ngram", len(prompt), False, [])
        generated = output[:1]
        stats = GenerationStats()
        while len(generated) < len(output):
            context, rest = prompt + generated, output[len(generated) :]
            rnd = plan_round(sources, context, max_new - len(generated), None, 0.0, None)
            drafts, accepted = rnd.tokens, 0
            while accepted < min(len(drafts), len(rest)) and drafts[accepted] == rest[accepted]:
                accepted += 1
            emitted = rest[: accepted + 1]
            record(stats, rnd, accepted, len(emitted))
            generated += emitted
            counts.passes += 1
            counts.cost += curve[len(drafts)]
        counts.tokens += max(0, len(output) - 1)
        counts.plain += max(0, len(output) - 1) * curve[0]
        counts.proposed += stats.proposed_tokens
        counts.accepted += stats.accepted_tokens
        if doc is not None and output:
            engine.copies.add_output(doc, prompt[-LEAD:], output)
    return counts


def lookups(
    engine: SpecEngine, cases: list[Case], max_new: int, before: list[Case] | None = None
) -> dict[str, object]:
    """The plain prompt lookup and the copy index over the same cases, each from empty (after
    the `before` cases, not counted)."""
    rows: dict[str, object] = {}
    base = engine.options
    for name, budget in (("prompt_lookup", 0), ("copy_index", base.copy_index_tokens or 131072)):
        engine.options = replace(base, copy_index_tokens=budget)
        engine.gates = Gates(engine.options)
        engine.copies = CopyIndex(budget)  # empty, and its calibration at its prior
        replay(engine, before or [], max_new)
        rows[name] = replay(engine, cases, max_new).row()
    engine.options, engine.gates = base, Gates(base)
    return rows


def recorded(path: Path) -> list[Case]:
    cases: list[Case] = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r["max_new"] > 1 and r["output"]:
            cases.append((None if r["short"] else r["doc"], r["prompt"], r["output"]))
    return cases


def timed(engine: SpecEngine, texts: list[str], max_new: int) -> dict[str, object]:
    """The engine run for real, back to back: the target alone, then "ngram" and "both" with
    plain prompt lookup and with the copy index (decode tok/s, and the output checked)."""
    prompts = [BenchPrompt(str(i), t) for i, t in enumerate(texts)]
    base = engine.options
    rows: dict[str, object] = {}
    reference = run_engine_mode(engine, prompts, "off", max_new)
    rows["target_only"] = reference.summary(reference.outputs)
    for method in ("ngram", "both") if engine.draft is not None else ("ngram",):
        for name, budget in (("prompt_lookup", 0), ("copy_index", base.copy_index_tokens)):
            engine.options = replace(base, copy_index_tokens=budget)
            engine.gates, engine.copies = Gates(engine.options), CopyIndex(budget)
            result = run_engine_mode(engine, prompts, method, max_new)
            rows[f"{method}_{name}"] = result.summary(reference.outputs)
    engine.options, engine.gates = base, Gates(base)
    return rows


def read_curve(source: str, n: int) -> tuple[float, ...]:
    if source.startswith("linear:"):
        ratio = float(source.removeprefix("linear:"))
        return tuple(1.0 + (ratio - 1.0) / 7 * i for i in range(n))
    rows = json.loads(Path(source).read_text())["ms"]
    return tuple(next(iter(rows.values()))[:n])


def target_outputs(engine: SpecEngine, texts: list[str], max_new: int) -> list[list[int]]:
    return [
        engine.generate(GenerationRequest(t, max_new_tokens=max_new, method="off")).token_ids
        for t in texts
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spec_lsp.benchmarks.copy_index")
    parser.add_argument("--preset", default="coder")
    parser.add_argument("--prompts", type=int, default=12)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--outputs", help="a JSON file of the target's outputs (kept, reused)")
    parser.add_argument("--records", help="a JSONL file of a replay's generations")
    parser.add_argument("--timed", type=int, default=0, help="time the engine on N prompts too")
    parser.add_argument(
        "--curve",
        help="the verify-cost curve to price with instead of the one measured at load: a "
        "`bench verify-cost` JSON file (its first row), or linear:R (8 rows R times one)",
    )
    args = parser.parse_args(argv)
    from spec_lsp.presets import load_preset_engine

    engine = load_preset_engine(args.preset, device="cpu")
    if args.curve:
        curve = read_curve(args.curve, engine.options.k_max + 1)
        engine.options = replace(engine.options, verify_cost=curve)
        engine.gates = Gates(engine.options)
    texts = [p.text for p in bench_prompts(args.prompts)]
    if args.timed:
        print(f"timed modes on {args.timed} prompts...", file=sys.stderr)
        print(json.dumps({"timed": timed(engine, texts[: args.timed], args.max_new_tokens)}))
    saved = Path(args.outputs) if args.outputs else None
    if saved is not None and saved.exists():
        outputs = json.loads(saved.read_text())
    else:
        print(f"target alone on {len(texts)} prompts...", file=sys.stderr)
        outputs = target_outputs(engine, texts, args.max_new_tokens)
        # Each prompt again after its answer's first line was typed.
        firsts = [engine.decode(o).split("\n", 1)[0] + "\n" for o in outputs]
        typed = [t + f for t, f in zip(texts, firsts, strict=True)]
        outputs += target_outputs(engine, typed, args.max_new_tokens)
        outputs = [outputs, firsts]
        if saved is not None:
            saved.write_text(json.dumps(outputs))
    (answers, firsts), n = outputs, len(texts)
    windows = [engine._window(t) for t in texts]
    again = [engine._window(t + f) for t, f in zip(texts, firsts, strict=True)]
    cold: list[Case] = [(None, windows[i], answers[i]) for i in range(n)]
    stream: list[Case] = [(f"doc{i}", windows[i], answers[i]) for i in range(n)]
    follow: list[Case] = [(f"doc{i}", again[i], answers[n + i]) for i in range(n)]
    curve = engine.options.verify_cost
    report = {
        "preset": engine.name,
        "kernels": engine.kernels,
        "verify_cost_ms": [round(c, 2) for c in curve],
        "cold": lookups(engine, cold, args.max_new_tokens),
        "stream": lookups(engine, stream, args.max_new_tokens),
        "follow": lookups(engine, follow, args.max_new_tokens, before=stream),
    }
    if args.records:
        report["replay"] = lookups(engine, recorded(Path(args.records)), 1 << 16)  # no room limit
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
