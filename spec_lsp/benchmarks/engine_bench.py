"""`spec-lsp bench engine`: this engine's modes against transformers' own, same prompts, one run.

Modes: `target_only` (this engine, no drafting), `speculative_<method>` for each drafting method the
preset supports, `hf_generate` (transformers `generate`, greedy) and `hf_assisted_ngram` /
`hf_assisted_draft` (transformers `generate` with `prompt_lookup_num_tokens` / `assistant_model`).
Every mode runs cold (no KV reuse across prompts) so they are compared on equal terms. Target
forwards are counted with a forward hook on the target model, whatever calls it.

Decode tok/s leaves prefill out (with KV reuse a keystroke rarely prefills much); where the preset's
weights are packed, `target_only_float32` runs the same target in float32 and the report gives the
packed target's top-1 agreement with it. Where the preset's target is a GGUF file (`bundled:`,
`gguf:`, a .gguf path) and a llama-server binary is there, `llama_cpp*` rows run llama.cpp's server
on the same files: plain, n-gram and draft-model speculation (`benchmarks.peers`), and the report
sets the engine's best speculative mode against the fastest of them, and prefill against prefill.
The verify-cost line is the measured cost of a target pass over 8 tokens against 1.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import torch

from spec_lsp.benchmarks.peers import add_peer_modes, format_comparison
from spec_lsp.benchmarks.prompts import BenchPrompt, bench_prompts
from spec_lsp.engine.api import DraftMethod, GenerationRequest
from spec_lsp.engine.engine import SpecEngine


@dataclass
class ModeResult:
    outputs: list[list[int]] = field(default_factory=list)
    seconds: float = 0.0
    decode_seconds: float | None = None  # without prefill; None where it cannot be split off
    prefill_tokens: int = 0
    prefill_seconds: float = 0.0
    forwards: int = 0
    proposed: int = 0
    accepted: int = 0
    callback_stops: int = 0

    def summary(self, reference: list[list[int]] | None) -> dict[str, Any]:
        generated = sum(len(o) for o in self.outputs)
        return {
            "tokens_per_s": round(generated / self.seconds, 2) if self.seconds else 0.0,
            "decode_tokens_per_s": round(generated / self.decode_seconds, 2)
            if self.decode_seconds
            else None,
            "prefill_tokens_per_s": round(self.prefill_tokens / self.prefill_seconds, 2)
            if self.prefill_seconds
            else None,
            "generated_tokens": generated,
            "seconds": round(self.seconds, 3),
            "target_forwards_per_token": round(self.forwards / generated, 3) if generated else None,
            "acceptance": round(self.accepted / self.proposed, 3) if self.proposed else None,
            "identical_to_target": reference is not None and self.outputs == reference,
            # the token ids themselves, digested: equal across two runs (two commits, two
            # machines) when every prompt's output is (issue 40: behaviour unchanged)
            "outputs_sha256": hashlib.sha256(json.dumps(self.outputs).encode()).hexdigest()[:16],
        }


class ForwardCounter:
    """Forward passes of a model: transformers' forwards (a hook) and the engine's lean ones."""

    def __init__(self, model: torch.nn.Module, forward: Any = None) -> None:
        self._hooked = 0
        self._lean = forward if getattr(forward, "name", "") == "lean" else None
        self._lean_start = self._lean.passes if self._lean is not None else 0
        self._handle = model.register_forward_hook(self._hook)

    @property
    def count(self) -> int:
        lean = self._lean.passes - self._lean_start if self._lean is not None else 0
        return self._hooked + lean

    def _hook(self, *_: object) -> None:
        self._hooked += 1

    def close(self) -> None:
        self._handle.remove()


def run_engine_mode(
    engine: SpecEngine, prompts: list[BenchPrompt], method: DraftMethod, max_new: int
) -> ModeResult:
    result = ModeResult(decode_seconds=0.0)
    counter = ForwardCounter(engine.target, engine.forwards.target)
    try:
        for p in prompts:
            t = time.perf_counter()
            # idle: a draft catches up in the prefill, as the server's idle work does for it
            req = GenerationRequest(p.text, max_new_tokens=max_new, method=method, idle=True)
            r = engine.generate(req)
            elapsed = time.perf_counter() - t
            result.seconds += elapsed
            result.decode_seconds = (result.decode_seconds or 0.0) + max(
                0.0, elapsed - r.stats.prefill_ms / 1000
            )
            result.outputs.append(r.token_ids)
            result.prefill_tokens += r.stats.prefilled_tokens
            result.prefill_seconds += r.stats.prefill_ms / 1000
            result.proposed += r.stats.proposed_tokens
            result.accepted += r.stats.accepted_tokens
    finally:
        counter.close()
    result.forwards = counter.count
    return result


def run_hf_mode(
    engine: SpecEngine, prompts: list[BenchPrompt], max_new: int, **kwargs: Any
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
    prompts: list[BenchPrompt],
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
        try:
            modes["hf_assisted_draft"] = run_hf_mode(
                engine, prompts, max_new, assistant_model=assistant
            ).summary(reference.outputs)
        except ValueError as exc:  # e.g. transformers 5.17 refuses vocabularies of two sizes
            print(f"hf_assisted_draft: skipped (transformers refused: {exc})", file=log)
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
        f"{'mode':<22} {'tok/s':>8} {'decode':>8} {'prefill':>8} {'vs target':>9} {'fwd/tok':>8} "
        f"{'accept':>7} {'identical':>9}"
    )
    rows = [head, "-" * len(head)]
    for name, m in modes.items():
        acc = "-" if m["acceptance"] is None else f"{m['acceptance']:.2f}"
        fwd = (
            "-"
            if m["target_forwards_per_token"] is None
            else f"{m['target_forwards_per_token']:.2f}"
        )
        dec, pre = m.get("decode_tokens_per_s"), m.get("prefill_tokens_per_s")
        same = {True: "yes", False: "NO", None: "-"}[m["identical_to_target"]]
        rows.append(
            f"{name:<22} {m['tokens_per_s']:>8.1f} {'-' if dec is None else f'{dec:.1f}':>8} "
            f"{'-' if pre is None else f'{pre:.1f}':>8} {m['tokens_per_s'] / base:>8.2f}x "
            f"{fwd:>8} {acc:>7} {same:>9}"
        )
    return "\n".join(rows)


def float32_reference(
    engine: SpecEngine, spec: Any, prompts: list[BenchPrompt], max_new: int, random_weights: bool
) -> tuple[dict[str, Any], float | None]:
    """The same target in float32: its target_only row, and the packed target's agreement."""
    from dataclasses import replace

    from spec_lsp.benchmarks.quality import top1_agreement
    from spec_lsp.engine.loading import is_gguf, load_engine

    plain = load_engine(
        # Today's float32 target as the issue measured it: transformers' own forward.
        # (A GGUF target named float32 is de-quantized: the float reference of its blocks.)
        replace(
            spec,
            draft=None,
            weights={engine.device: "float32"} if is_gguf(spec.target) else {},
            measure_verify=False,
            forward="transformers",
        ),
        device=engine.device,
        random_weights=random_weights,
    )
    plain.vocab_limit = engine.vocab_limit
    row = run_engine_mode(plain, prompts, "off", max_new).summary(None)
    agreement = (
        None
        if random_weights
        else top1_agreement(engine.forwards.target, plain.target, engine.encode)
    )
    return row, agreement


def verify_cost(engine: SpecEngine) -> dict[str, Any]:
    """A target pass over 8 tokens against a pass over 1 (the loaded curve, else measured now)."""
    from spec_lsp.engine.timing import pass_costs

    # Measured again here, beside the bench's own runs, through the forward the engine runs.
    curve = pass_costs(engine.forwards.target, 8)
    return {
        "ms_1": round(curve[0], 2),
        "ms_8": round(curve[7], 2),
        "ratio": round(curve[7] / curve[0], 2),
    }


def main(
    preset: str,
    device: str,
    max_new: int,
    count: int,
    json_path: str | None,
    random_weights: bool,
    assistant_source: str | None = None,
    reference: bool = True,
) -> int:
    from spec_lsp.engine.loading import load_model
    from spec_lsp.presets import load_preset, load_preset_engine

    spec = load_preset(preset).load_spec()
    engine = load_preset_engine(preset, device=device, random_weights=random_weights)
    assistant = None
    if assistant_source:
        assistant = load_model(assistant_source, str(engine.target.device), engine.target.dtype)
    prompts = bench_prompts(count)
    modes = run(engine, prompts, max_new, engine.options.k, assistant=assistant)
    agreement = None
    if reference and not engine.weights.startswith("float32"):
        print("target_only_float32 (the same target in float32)...", file=sys.stderr)
        modes["target_only_float32"], agreement = float32_reference(
            engine, spec, prompts, max_new, random_weights
        )
    peers: dict[str, Any] = {}
    if engine.device == "cpu" and not random_weights:
        threads = torch.get_num_threads()
        peers = add_peer_modes(
            modes, spec.target, spec.draft, prompts, max_new, threads, sys.stderr
        )
    cost = verify_cost(engine)
    report = {
        "preset": engine.name,
        "device": engine.device,
        "weights": engine.weights,
        "forward": engine.forward,
        "kernels": engine.kernels,
        "random_weights": random_weights,
        "tokenizer": engine.tokenizer_source,
        "max_new_tokens": max_new,
        "prompts": [p.name for p in prompts],
        "torch_threads": torch.get_num_threads(),
        "draft": "feature head" if engine.head is not None else ("model" if engine.draft else None),
        "assistant": assistant_source,
        "verify_cost": cost,
        "top1_agreement_vs_float32": agreement,
        "modes": modes,
        "llama_server": peers or None,
    }
    print_report(report)
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=2))
        print(f"wrote {json_path}", file=sys.stderr)
    return 0


def print_report(report: dict[str, Any]) -> None:
    modes, cost, agreement = (
        report["modes"],
        report["verify_cost"],
        report["top1_agreement_vs_float32"],
    )
    print(
        f"weights: {report['weights']}   threads: {report['torch_threads']}   "
        f"device: {report['device']}"
    )
    print(f"forward: {report.get('forward')}   kernels: {report.get('kernels')}")
    if report.get("random_weights"):
        print(f"random weights (timing only); tokenizer: {report.get('tokenizer')}")
    print(format_table(modes))
    print(
        f"verify cost: a pass over 8 tokens {cost['ms_8']:.1f} ms vs 1 token {cost['ms_1']:.1f} ms "
        f"= {cost['ratio']:.2f}x (goal <= 1.3x)"
    )
    peer_cost = modes.get("llama_cpp", {}).get("pass_cost")
    if peer_cost:
        print(
            f"llama-server's own pass over 8 new tokens {peer_cost['ms_8']:.1f} ms vs 1 token "
            f"{peer_cost['ms_1']:.1f} ms = {peer_cost['ratio']:.2f}x "
            "(output layer on the last only)"
        )
    peers = report.get("llama_server") or {}
    if peers.get("build"):
        print(f"llama-server: {peers['build']}")
    if peers.get("comparison"):
        print("\n".join(format_comparison(peers["comparison"])))
    if agreement is not None:
        print(f"top-1 agreement with the float32 target on held-out code: {agreement:.3f}")
