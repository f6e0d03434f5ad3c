"""`spec-lsp bench engine`: this engine's modes against transformers' own, same prompts, one run.

Modes: `target_only` (this engine, no drafting), `speculative_<method>` for each drafting method the
preset supports, `hf_generate` (transformers `generate`, greedy) and `hf_assisted_ngram` /
`hf_assisted_draft` (transformers `generate` with `prompt_lookup_num_tokens` / `assistant_model`).
Every mode runs cold (no KV reuse across prompts) so they are compared on equal terms. Target
forwards are counted with a forward hook on the target model, whatever calls it.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import torch

from spec_lsp.benchmarks.prompts import Prompt, bench_prompts
from spec_lsp.engine.api import GenerationRequest
from spec_lsp.engine.engine import SpecEngine


@dataclass
class ModeResult:
    outputs: list[list[int]] = field(default_factory=list)
    seconds: float = 0.0
    forwards: int = 0
    proposed: int = 0
    accepted: int = 0
    callback_stops: int = 0

    def summary(self, reference: list[list[int]] | None) -> dict[str, Any]:
        generated = sum(len(o) for o in self.outputs)
        return {
            "tokens_per_s": round(generated / self.seconds, 2) if self.seconds else 0.0,
            "generated_tokens": generated,
            "seconds": round(self.seconds, 3),
            "target_forwards_per_token": round(self.forwards / generated, 3) if generated else None,
            "acceptance": round(self.accepted / self.proposed, 3) if self.proposed else None,
            "identical_to_target": reference is not None and self.outputs == reference,
        }


class ForwardCounter:
    def __init__(self, model: torch.nn.Module) -> None:
        self.count = 0
        self._handle = model.register_forward_hook(self._hook)

    def _hook(self, *_: object) -> None:
        self.count += 1

    def close(self) -> None:
        self._handle.remove()


def run_engine_mode(
    engine: SpecEngine, prompts: list[Prompt], method: str, max_new: int
) -> ModeResult:
    result = ModeResult()
    counter = ForwardCounter(engine.target)
    try:
        for p in prompts:
            t = time.perf_counter()
            r = engine.generate(
                GenerationRequest(prompt=p.text, max_new_tokens=max_new, method=method)
            )
            result.seconds += time.perf_counter() - t
            result.outputs.append(r.token_ids)
            result.proposed += r.stats.proposed_tokens
            result.accepted += r.stats.accepted_tokens
    finally:
        counter.close()
    result.forwards = counter.count
    return result


def run_hf_mode(
    engine: SpecEngine, prompts: list[Prompt], max_new: int, **kwargs: Any
) -> ModeResult:
    result = ModeResult()
    counter = ForwardCounter(engine.target)
    eos = sorted(engine.eos_ids)
    try:
        for p in prompts:
            ids = torch.tensor(
                [engine.encode(p.text)[-engine.options.context_tokens :]],
                device=engine.target.device,
            )
            t = time.perf_counter()
            with torch.inference_mode():
                out = cast(Any, engine.target).generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=max_new,
                    do_sample=False,
                    eos_token_id=eos or None,
                    pad_token_id=eos[0] if eos else 0,
                    **kwargs,
                )
            result.seconds += time.perf_counter() - t
            new = out[0, ids.shape[1] :].tolist()
            # transformers keeps the EOS token in its output; the engine does not emit it.
            while new and new[-1] in engine.eos_ids:
                new.pop()
            result.outputs.append(new)
    finally:
        counter.close()
    result.forwards = counter.count
    return result


def run(
    engine: SpecEngine,
    prompts: list[Prompt],
    max_new: int,
    k: int,
    log: Any = sys.stderr,
    assistant: Any = None,
) -> dict[str, Any]:
    modes: dict[str, Any] = {}
    # Warm-up: the first forwards of a process are slower (allocations, kernel selection).
    engine.generate(GenerationRequest(prompt=prompts[0].text, max_new_tokens=4, method="off"))
    print(f"target_only on {len(prompts)} prompts...", file=log)
    reference = run_engine_mode(engine, prompts, "off", max_new)
    modes["target_only"] = reference.summary(reference.outputs)
    for method in engine.methods[1:]:
        print(f"speculative_{method}...", file=log)
        modes[f"speculative_{method}"] = run_engine_mode(engine, prompts, method, max_new).summary(
            reference.outputs
        )
    print("hf_generate...", file=log)
    modes["hf_generate"] = run_hf_mode(engine, prompts, max_new).summary(reference.outputs)
    print("hf_assisted_ngram...", file=log)
    modes["hf_assisted_ngram"] = run_hf_mode(
        engine, prompts, max_new, prompt_lookup_num_tokens=k
    ).summary(reference.outputs)
    # transformers' assisted generation runs a standalone draft model; a feature head is not one.
    if assistant is None and engine.draft is not None and engine.head is None:
        assistant = engine.draft
    if assistant is not None:
        print("hf_assisted_draft...", file=log)
        modes["hf_assisted_draft"] = run_hf_mode(
            engine, prompts, max_new, assistant_model=assistant
        ).summary(reference.outputs)
    elif engine.head is not None:
        print(
            "hf_assisted_draft: skipped (the draft is a feature head; pass --assistant MODEL "
            "to compare with a standalone draft)",
            file=log,
        )
    return modes


def format_table(modes: dict[str, Any]) -> str:
    base = modes["target_only"]["tokens_per_s"] or 1.0
    head = (
        f"{'mode':<22} {'tok/s':>8} {'vs target':>9} {'fwd/tok':>8} {'accept':>7} {'identical':>9}"
    )
    rows = [head, "-" * len(head)]
    for name, m in modes.items():
        acc = "-" if m["acceptance"] is None else f"{m['acceptance']:.2f}"
        fwd = (
            "-"
            if m["target_forwards_per_token"] is None
            else f"{m['target_forwards_per_token']:.2f}"
        )
        rows.append(
            f"{name:<22} {m['tokens_per_s']:>8.1f} {m['tokens_per_s'] / base:>8.2f}x {fwd:>8} {acc:>7}"
            f" {'yes' if m['identical_to_target'] else 'NO':>9}"
        )
    return "\n".join(rows)


def main(
    preset: str,
    device: str,
    max_new: int,
    count: int,
    json_path: str | None,
    random_weights: bool,
    assistant_source: str | None = None,
) -> int:
    from spec_lsp.engine.loading import load_model
    from spec_lsp.presets import load_engine

    engine = load_engine(preset, device=device, random_weights=random_weights)
    assistant = None
    if assistant_source:
        assistant = load_model(assistant_source, str(engine.target.device), engine.target.dtype)
    prompts = bench_prompts(count)
    modes = run(engine, prompts, max_new, engine.options.k, assistant=assistant)
    report = {
        "preset": engine.name,
        "device": engine.device,
        "random_weights": random_weights,
        "max_new_tokens": max_new,
        "prompts": [p.name for p in prompts],
        "torch_threads": torch.get_num_threads(),
        "draft": "feature head" if engine.head is not None else ("model" if engine.draft else None),
        "assistant": assistant_source,
        "modes": modes,
    }
    print(format_table(modes))
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=2))
        print(f"wrote {json_path}", file=sys.stderr)
    return 0
