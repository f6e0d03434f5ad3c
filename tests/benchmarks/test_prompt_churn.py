"""`python -m spec_lsp.benchmarks.prompt_churn`: tokens re-prefilled per request counted from the
prompts alone (a document's first prompt apart), on a recorded session through the real service."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spec_lsp.benchmarks.prompt_churn import churn, main
from spec_lsp.replay.format import read_session

SESSION = Path(__file__).resolve().parents[1] / "sessions" / "colorsys-_v.jsonl"


def test_churn_counts_the_tokens_past_each_documents_previous_prompt() -> None:
    prompts = [("a", "abcd"), ("a", "abcx"), ("b", "zz"), ("a", "abcxy"), ("a", "q")]
    figures = churn(prompts, list).figures()
    assert figures["coldPrompts"] == 2  # a's and b's first prompts
    assert figures["requests"] == 3 and figures["refillTotal"] == 1 + 1 + 1
    assert figures["refillMax"] == 1 and figures["jumps"] == 0


def test_a_session_is_replayed_through_the_service(capsys: pytest.CaptureFixture[str]) -> None:
    main([str(SESSION), "--preset", "tiny"])
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    asked = [e for e in read_session(SESSION).events if e.method == "textDocument/inlineCompletion"]
    reached = figures["requests"] + figures["coldPrompts"]  # all but where nothing is suggested
    assert 0.9 * len(asked) < reached <= len(asked)
    assert figures["coldPrompts"] == 1 and figures["refillP50"] <= 2
