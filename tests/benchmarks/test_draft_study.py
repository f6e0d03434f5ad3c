"""The draft study (`python -m spec_lsp.benchmarks.draft_study`) on tiny random-weight models, and
its projection on hand-made records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from spec_lsp.benchmarks import draft_study
from spec_lsp.benchmarks.draft_projection import (
    Costs,
    Track,
    agreement,
    iid_speedup,
    mean_run,
    project,
)
from spec_lsp.engine.from_source import tiny_model
from spec_lsp.engine.lean import LeanDecoder

FLAT = Costs(verify=(10.0, 12.0, 14.0, 16.0, 18.0), draft_step=1.0)


def _track(match: str, conf: list[float] | None = None) -> Track:
    hits = tuple(c == "1" for c in match)
    return Track(hits, tuple(conf or [1.0] * len(hits)))


def test_mean_run_counts_only_the_leading_matches() -> None:
    track = _track("1101")
    # runs from each position for k = 2: 2, 1, 0, 1
    assert mean_run([track], 2) == pytest.approx(1.0)
    assert mean_run([track], 1) == pytest.approx(0.75)


def test_a_draft_that_always_matches_emits_k_plus_one_tokens_a_round() -> None:
    p = project([_track("1" * 10)], FLAT, k=4)
    assert (p.tokens, p.rounds, p.accepted) == (10, 2, 8)  # 5 + 5
    # two rounds of 4 draft steps and a 5-row pass, against 10 one-row passes
    assert p.speedup == pytest.approx(10 * 10.0 / (2 * (4 * 1.0 + 18.0)))


def test_a_confidence_threshold_stops_the_round_and_pays_the_step_that_stopped_it() -> None:
    p = project([_track("111", [0.9, 0.2, 0.9])], FLAT, k=2, threshold=0.5)
    # round 1: one token proposed (accepted), the second step's 0.2 stops it: 2 steps, 2 rows;
    # round 2 at position 2: proposes the last one and meets the end
    assert (p.rounds, p.proposed, p.accepted, p.tokens) == (2, 2, 2, 4)
    assert p.speedup == pytest.approx(4 * 10.0 / ((2 * 1.0 + 12.0) + (1.0 + 12.0)))


def test_agreement_among_the_confident_positions() -> None:
    share, agree = agreement([_track("1010", [0.9, 0.9, 0.1, 0.9])], 0.5)
    assert share == pytest.approx(0.75)
    assert agree == pytest.approx(1 / 3)  # positions 0, 1 and 3: one match


@torch.inference_mode()
def test_traced_greedy_is_the_targets_plain_greedy_decoding() -> None:
    target = LeanDecoder(tiny_model(4, 7, 256))
    ids = list(range(40, 60))
    trace = draft_study.trace_prompt(target, None, ids, 6, [2], set())
    cache, plain = target.new_cache(), []
    logits, _, _ = target.forward(ids, cache)
    for _ in range(6):
        plain.append(int(logits[-1].argmax()))
        logits, _, _ = target.forward([plain[-1]], cache)
    assert trace["greedy"] == plain


def test_the_study_agrees_everywhere_at_the_last_layer_and_projects_every_draft() -> None:
    target = LeanDecoder(tiny_model(3, 7, 256))
    draft = LeanDecoder(tiny_model(1, 9, 256))
    prompts = [list(range(10, 30)), list(range(50, 62))]
    report = draft_study.study(target, draft, prompts, 8, [1, 3], set(), cost_context=8, reps=1)
    summary = report["summary"]
    assert summary["exits"]["3"]["agreement"] == 1.0  # the exit after every layer is the target
    assert summary["exits"]["3"]["mean_run"][7] > summary["exits"]["3"]["mean_run"][0]
    assert summary["draft"]["positions"] == 16
    assert len(report["pieces"]["full"]) == 9 and report["pieces"]["output"] > 0
    lines = draft_study.tables(report)
    assert lines[2].startswith("| layers 0-0 |") and any("draft model" in x for x in lines)


def test_an_independent_draft_that_always_matches_for_free_takes_the_longest_run() -> None:
    speedup, k = iid_speedup(1.0, 0.0, (1.0, 1.1, 1.2))
    assert (k, speedup) == (2, pytest.approx(3 / 1.2))
    assert iid_speedup(0.0, 0.5, (1.0, 1.1)) == (1.0, 0)  # a draft that never lands: no draft


def test_a_saved_report_is_projected_again_over_another_verify_curve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = LeanDecoder(tiny_model(2, 7, 256))
    report = draft_study.study(target, None, [list(range(10, 30))], 6, [1], set(), 8, reps=1)
    report.update(preset="tiny", cpu="cpu", kernels="torch", date="today")
    saved, curve = tmp_path / "study.json", tmp_path / "curve.json"
    saved.write_text(json.dumps(report))
    curve.write_text(json.dumps({"ratio": {"200": [1.0 + 0.1 * r for r in range(16)]}}))
    assert draft_study.main(["--from-json", str(saved), "--verify-curve", str(curve)]) == 0
    out = capsys.readouterr().out
    assert "after 200 tokens: 1.00 1.10 1.20" in out
    assert "| layers 0-0 |" in out
    # acceptance 0.5, a free step: k = 2 emits 1.75 tokens a round for 1.2 passes
    assert "| 0.5 | 1.46x (k 2) |" in out


def test_session_prompts_are_the_servers_fim_prompts_for_the_recorded_requests() -> None:
    sessions = sorted(str(p) for p in (Path(__file__).parents[1] / "sessions").glob("*.jsonl"))
    prompts = draft_study.session_prompts(sessions, "coder", 3)
    assert len(prompts) == 3
    assert all(p.startswith("<|fim_prefix|>") and "<|fim_middle|>" in p for p in prompts)
