"""The distillation report: held-out acceptance, draft cost, expected and measured speedup.

- Held-out agreement: share of held-out positions where the draft's greedy token equals the
  target's (teacher forcing; from training's last evaluation).
- Cost ratio c: the draft's time per decoded token over the target's, on the same device, timed
  alternately so that a loaded machine slows both alike (medians).
- Engine figures: the real speculative engine on held-out prompts, target-only vs draft drafting:
  acceptance a (accepted / proposed), mean draft length g, decode tokens/s, identical outputs.
- Expected speedup S = (1 - a^(g+1)) / ((1 - a)(g c + 1)) (Leviathan et al.), next to the measured
  tokens/s ratio.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from spec_lsp.distill.loop import load_plain
from spec_lsp.engine.draft_model import load_draft
from spec_lsp.engine.head import HeadState, is_head_dir, load_head

PROMPT_TOKENS = 192


def expected_speedup(a: float, g: float, c: float) -> float:
    """Leviathan et al.'s expected walltime improvement for acceptance a, draft length g, cost c."""
    if g <= 0:
        return 1.0
    a = min(max(a, 0.0), 1.0 - 1e-9)
    return (1 - a ** (g + 1)) / ((1 - a) * (g * c + 1))


@torch.inference_mode()
def cost_ratio(target: Any, draft: Any, prompt: list[int], tokens: int = 24) -> dict[str, float]:
    """Median ms per decoded token of each model (one token per forward, KV cache on)."""
    from spec_lsp.engine.cache import ModelState

    t_state, d_state = ModelState(target), ModelState(draft)
    seq = list(prompt)
    t_state.advance(seq)
    d_state.advance(seq)
    t_ms: list[float] = []
    d_ms: list[float] = []
    for i in range(tokens):
        seq = seq + [prompt[i % len(prompt)]]
        t0 = time.perf_counter()
        t_state.advance(seq)
        t1 = time.perf_counter()
        d_state.advance(seq)
        t2 = time.perf_counter()
        t_ms.append((t1 - t0) * 1000)
        d_ms.append((t2 - t1) * 1000)
    target_ms, draft_ms = statistics.median(t_ms), statistics.median(d_ms)
    return {
        "target_ms_per_token": target_ms,
        "draft_ms_per_token": draft_ms,
        "c": draft_ms / target_ms,
    }


def engine_figures(
    target: Any, tokenizer: Any, draft: Any, prompts: list[str], max_new_tokens: int = 32
) -> dict[str, Any]:
    """Target-only vs draft drafting on the same prompts (no KV reuse between prompts)."""
    from spec_lsp.engine.api import GenerationRequest
    from spec_lsp.engine.engine import EngineOptions, SpecEngine

    engine = SpecEngine(target, tokenizer, draft, EngineOptions(method="draft"))
    figures: dict[str, Any] = {}
    outputs: dict[str, list[list[int]]] = {}
    for method in ("off", "draft"):
        gen = ms = proposed = accepted = rounds = rejections = 0.0
        outputs[method] = []
        for prompt in prompts:
            req = GenerationRequest(prompt=prompt, max_new_tokens=max_new_tokens, method=method)
            res = engine.generate(req)
            s = res.stats
            outputs[method].append(res.token_ids)
            gen += s.generated_tokens
            ms += s.total_ms - s.prefill_ms
            proposed += s.proposed_tokens
            accepted += s.accepted_tokens
            rejections += s.rejections
            rounds += max(0, s.target_forwards - 1)
        figures[method] = {
            "tokens": int(gen),
            "decode_tokens_per_s": gen / (ms / 1000) if ms > 0 else 0.0,
            "acceptance": accepted / proposed if proposed else None,
            "token_acceptance": accepted / (accepted + rejections) if proposed else None,
            "mean_draft_len": proposed / rounds if rounds else 0.0,
        }
    figures["identical_outputs"] = outputs["off"] == outputs["draft"]
    return figures


def heldout_prompts(out: Path, tokenizer: Any, count: int) -> list[str]:
    """The first PROMPT_TOKENS tokens of the first held-out windows (files never trained on)."""
    if (out / "cache" / "heldout.pt").exists():
        inputs = load_plain(out / "cache" / "heldout.pt")["inputs"]
    else:
        from spec_lsp.distill.corpus import windows

        inputs = windows(load_plain(out / "cache" / "corpus.pt")["heldout"], PROMPT_TOKENS)
    return [str(tokenizer.decode(row.tolist())) for row in inputs[:count, :PROMPT_TOKENS]]


@torch.inference_mode()
def head_cost_ratio(
    target: Any, head: Any, prompt: list[int], tokens: int = 24
) -> dict[str, float]:
    """Median ms of one target decode step and of one head draft step (one pair, KV cache on),
    timed alternately so that a loaded machine slows both alike."""
    from spec_lsp.engine.cache import ModelState

    t_state = ModelState(target, features=True)
    seq = list(prompt)
    t_state.advance(seq)
    h_state = HeadState(head)
    assert t_state.features is not None
    feature = h_state.step(t_state.features[:-1], seq[1:], 0)
    t_ms: list[float] = []
    h_ms: list[float] = []
    for i in range(tokens):
        seq = seq + [prompt[i % len(prompt)]]
        t0 = time.perf_counter()
        t_state.advance(seq)
        t1 = time.perf_counter()
        feature = h_state.step(feature[None], [seq[-1]], h_state.pairs)
        int(head.restricted_logits(feature).argmax())
        t2 = time.perf_counter()
        t_ms.append((t1 - t0) * 1000)
        h_ms.append((t2 - t1) * 1000)
    target_ms, head_ms = statistics.median(t_ms), statistics.median(h_ms)
    return {
        "target_ms_per_token": target_ms,
        "draft_ms_per_token": head_ms,
        "c": head_ms / target_ms,
    }


def write_report(
    out: Path,
    teacher: Any,
    source: str,
    history: list[dict[str, float]],
    prompts: int = 6,
    max_new_tokens: int = 32,
) -> dict[str, Any]:
    """Measures the draft (a decoder or a feature head) written in `out` against the target and
    writes `out/report.json`."""
    target = teacher.model
    embeddings = target.get_input_embeddings().weight.detach()
    head = is_head_dir(out)
    draft = load_head(out, embeddings) if head else load_draft(out, embeddings=embeddings)
    draft = draft.to(target.device)
    texts = heldout_prompts(out, teacher.tokenizer, prompts)
    first = list(teacher.tokenizer(texts[0], add_special_tokens=False)["input_ids"])
    cost = (head_cost_ratio if head else cost_ratio)(target, draft, first)
    engine = engine_figures(target, teacher.tokenizer, draft, texts, max_new_tokens)
    report = summarize(draft, target, source, history, cost, engine)
    if head:
        report["summary"]["heldout_agreement_second"] = next(
            (h["agreement2"] for h in reversed(history) if "agreement2" in h), None
        )
    (out / "report.json").write_text(json.dumps(report, indent=2))
    return report


def summarize(
    draft: Any,
    target: Any,
    source: str,
    history: list[dict[str, float]],
    cost: dict[str, float],
    engine: dict[str, Any],
) -> dict[str, Any]:
    evals = [h["agreement"] for h in history if "agreement" in h]
    a = engine["draft"]["token_acceptance"] or 0.0
    g = engine["draft"]["mean_draft_len"]
    off_tps = engine["off"]["decode_tokens_per_s"]
    summary = {
        "target": source,
        "draft_params": sum(
            p.numel() for n, p in draft.named_parameters() if "embed_tokens" not in n
        ),
        "draft_vocab": int(draft.config.draft_vocab_size),
        "steps": int(history[-1].get("step", 0)) if history else 0,
        "heldout_agreement_initial": evals[0] if evals else None,
        "heldout_agreement": evals[-1] if evals else None,
        "engine_acceptance": engine["draft"]["acceptance"],
        "token_acceptance": a,
        "mean_draft_len": g,
        "c": cost["c"],
        "expected_speedup": expected_speedup(a, g, cost["c"]),
        "measured_speedup": engine["draft"]["decode_tokens_per_s"] / off_tps if off_tps else None,
        "identical_outputs": engine["identical_outputs"],
        "device": str(target.device),
    }
    return {"summary": summary, "cost": cost, "engine": engine, "history": history}
