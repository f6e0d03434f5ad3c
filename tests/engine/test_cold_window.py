"""A cold window's requests answer over the short window; once the full one is warm, over it.

`GenerationRequest.short_prompt` is the same request over a short window: the engine answers over
it where the document's KV lacks much of the full prompt (`engine/cold.py`), keeping its KV under
a key of its own, and goes back to the full window (dropping the short state) once idle work has
filled it. Either answer is the target's own greedy decoding of the prompt it used.
"""

from __future__ import annotations

from spec_lsp.engine import cold
from spec_lsp.engine.api import CancelToken, GenerationRequest

from .conftest import CODE_PROMPTS, make_engine

SHORT = CODE_PROMPTS[0]
# The same cursor after a long head (other files, the text far above): ~300 tokens more.
FULL = "".join(f"# line {i}: some context above the cursor\n" for i in range(40)) + SHORT


def request(prompt: str, short: str | None = SHORT, **kw) -> GenerationRequest:  # type: ignore[no-untyped-def]
    kw = {"max_new_tokens": 8, "method": "ngram"} | kw
    return GenerationRequest(prompt=prompt, doc_id="doc", short_prompt=short, **kw)


def test_a_cold_window_answers_over_the_short_one_exactly(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer, prefill_chunk=64)
    result = engine.generate(request(FULL))
    assert result.stats.short_window
    assert result.stats.prompt_tokens == engine.count_tokens(SHORT)
    alone = engine.generate(GenerationRequest(prompt=SHORT, max_new_tokens=8, method="ngram"))
    assert result.token_ids == alone.token_ids  # the target's own output over the short prompt
    assert engine.docs.get(cold.short_key("doc")) is not None
    assert engine.docs.get("doc") is None or len(engine.docs.get("doc").target) == 0  # type: ignore[union-attr]
    again = engine.generate(request(FULL + "    r"))  # typing: the short window's KV is reused
    assert again.stats.short_window and again.stats.prefilled_tokens <= 3


def test_once_idle_work_fills_the_window_requests_take_it_and_drop_the_short_state(
    target, tokenizer
) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer)
    engine.generate(request(FULL))
    warm = engine.generate(request(FULL, idle=True))
    assert not warm.stats.short_window  # idle work fills the full window, never the short one
    assert engine.docs.get(cold.short_key("doc")) is not None  # still there while it fills
    result = engine.generate(request(FULL + "    r"))
    assert not result.stats.short_window and result.stats.prefilled_tokens <= 3
    assert engine.docs.get(cold.short_key("doc")) is None
    alone = engine.generate(
        GenerationRequest(prompt=FULL + "    r", max_new_tokens=8, method="ngram")
    )
    assert result.token_ids == alone.token_ids


def test_short_windows_only_where_the_full_one_lacks_much_more(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer)
    assert not engine.generate(request(FULL, short=None)).stats.short_window  # none sent
    engine.forget("doc")
    small = engine.generate(request(SHORT + "#", short=SHORT))  # hardly longer: the full one
    assert not small.stats.short_window
    no_kv = GenerationRequest(prompt=FULL, doc_id="x", short_prompt=SHORT, reuse_kv=False)
    assert not engine.generate(no_kv).stats.short_window  # nothing is kept: nothing to win


def test_forgetting_a_document_drops_its_short_window_too(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer)
    engine.generate(request(FULL))
    engine.forget("doc")
    assert engine.docs.get(cold.short_key("doc")) is None and engine.docs.get("doc") is None


class _AfterShort(CancelToken):
    """Cancels once the document's short window holds `n` tokens (a key typed meanwhile)."""

    def __init__(self, engine, n: int) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.engine, self.n = engine, n

    @property
    def cancelled(self) -> bool:
        state = self.engine.docs.get(cold.short_key("doc"))
        return state is not None and len(state.target) >= self.n


def test_a_cursors_warm_up_prefills_its_short_window_first(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """Idle work over a cold window that carries its short one (the editor's cursor rests
    there): the short window is prefilled first, so a key typed while the full one fills is
    answered over it at once, exactly; it is never put on disk."""
    engine = make_engine(target, tokenizer, prefill_chunk=64)
    n = engine.count_tokens(SHORT)
    cancel = _AfterShort(engine, n - 1)  # `missing` keeps the prompt's last token to run
    warm = engine.generate(request(FULL, idle=True, cancel=cancel))
    assert warm.stats.stop_reason == "cancelled" and warm.stats.prefilled_tokens >= n - 1
    full = engine.docs.get("doc")
    assert full is None or len(full.target) == 0  # the full window's turn had not come
    result = engine.generate(request(FULL + "    r", short=SHORT + "    r"))
    assert result.stats.short_window and result.stats.prefilled_tokens <= 3
    alone = engine.generate(
        GenerationRequest(prompt=SHORT + "    r", max_new_tokens=8, method="ngram")
    )
    assert result.token_ids == alone.token_ids
    # Not cancelled: the short window, then the full one, prefilled in one job.
    engine.forget("doc")
    whole = engine.generate(request(FULL, idle=True))
    assert whole.stats.prefilled_tokens >= engine.count_tokens(FULL) - 1 + n - 1
    assert len(engine.docs.get(cold.short_key("doc")).target) >= n - 1  # type: ignore[union-attr]


def test_a_warm_up_whose_short_window_is_there_or_useless_prefills_only_the_full_one(
    target, tokenizer
) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(target, tokenizer)
    warm = engine.generate(request(SHORT + "#", short=SHORT, idle=True))
    assert engine.docs.get(cold.short_key("doc")) is None  # the full one hardly longer
    assert warm.stats.prefilled_tokens == engine.count_tokens(SHORT + "#")
    engine.forget("doc")
    engine.generate(request(FULL))  # a request over the short window: its KV is there
    before = len(engine.docs.get(cold.short_key("doc")).target)  # type: ignore[union-attr]
    again = engine.generate(request(FULL, idle=True))
    assert len(engine.docs.get(cold.short_key("doc")).target) == before  # type: ignore[union-attr]
    assert again.stats.prefilled_tokens == engine.count_tokens(FULL)


def test_idle_work_catches_the_short_windows_draft_up(target, random_draft, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """A request over a short window leaves a cold draft model aside (its catch-up costs more
    than it saves there); idle work carrying the short window (the fill after a short answer)
    catches its KV up first, so the next requests over it can draft."""
    # A cost curve and a draft step half a target pass: the gate prices a cold draft's lag.
    costs = dict(verify_cost=(10.0,) * 13, draft_cost=5.0)
    engine = make_engine(target, tokenizer, draft=random_draft, **costs)
    n = engine.count_tokens(SHORT)
    both = dict(method="both")
    first = engine.generate(request(FULL, **both))
    assert first.stats.short_window
    state = engine.docs.get(cold.short_key("doc"))
    assert state is not None
    lag = n - (len(state.draft.tokens) if state.draft is not None else 0)  # type: ignore[union-attr]
    assert lag >= cold.SHORT_FIRST_MIN
    engine.generate(request(FULL, idle=True, **both))
    assert len(state.draft.tokens) >= n - 1  # type: ignore[union-attr]
    full = engine.docs.get("doc")
    assert full is not None and len(full.target) >= engine.count_tokens(FULL) - 1  # then the full


def test_a_short_windows_copy_drafts_search_the_whole_window(target, tokenizer) -> None:  # type: ignore[no-untyped-def]
    """The short window holds a few lines; the copy drafter searches the document's source,
    which holds the full window's prompt, as a request over the full window would."""
    engine = make_engine(target, tokenizer)
    result = engine.generate(request(FULL))
    assert result.stats.short_window
    source = engine.copies.sources[("doc", "context")]
    assert len(source) == engine.count_tokens(FULL)
    off = make_engine(target, tokenizer)
    off.generate(request(FULL, method="off"))
    assert ("doc", "context") not in off.copies.sources  # no drafting: nothing to search
