"""A cold window's first requests: answered over a short window while the full one fills.

A request carries its prompt over the document's full window (other files' chunks, ~1,500 tokens
before the cursor) and, optionally, the same request over a short window (`short_prompt`: a few
hundred tokens before the cursor, no other files). Where the document's cached KV lacks much of
the full prompt (a file just opened, a jump far from where the window was), prefilling it would
hold the answer for seconds; the short prompt's KV, kept under its own key, costs a fraction of
that. `choose` picks the prompt whose missing tokens are fewer, by a margin that keeps the full
window once it is nearly there: the full window is filled on idle time meanwhile (the completion
layer's warm-up after a short answer), and once it is warm the short state is dropped. Idle work
for a cursor where the editor's cursor rests carries its short window too: `short_first` has it
prefilled first, so the first key there finds the short window ready, not a second of prefill.

Both are the target's own greedy output over their prompt: a short answer is exact for the short
prompt, and never for another version of the document (the request's text is the document's).
Knows nothing of documents' text, prompts' layout or LSP.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from spec_lsp.engine.api import GenerationRequest
from spec_lsp.engine.cache import DocState, DocumentStates, ModelState, common_prefix_len

# The full window is taken when it lacks at most this many tokens more than the short one: ~0.3-0.6
# s of prefill on a 2-core CPU for the coder pair, about what a short window's answer saves then.
MARGIN = 64
_KEY = "\x00short-window"  # suffix of the short window's state key
SHORT_FIRST_MIN = 16  # a short window lacking fewer tokens is not prefilled ahead (`short_first`)


def short_key(doc_id: str) -> str:
    """The key of a document's short-window KV state in `DocumentStates`."""
    return doc_id + _KEY


def is_short_key(doc_id: str) -> bool:
    """Whether `doc_id` names a short window's state (`short_key`)."""
    return doc_id.endswith(_KEY)


def missing(state: DocState | None, prompt: list[int]) -> int:
    """Tokens of `prompt` that `state`'s target KV lacks (what a prefill would run)."""
    if state is None:
        return len(prompt)
    return len(prompt) - min(common_prefix_len(state.target.tokens, prompt), len(prompt) - 1)


def choose(
    request: GenerationRequest,
    prompt: list[int],
    docs: DocumentStates,
    encode_window: Callable[[str], list[int]],
) -> list[int] | None:
    """The short window's prompt ids when the request should be answered over it, else None
    (the full window: warm enough, or the request has no short prompt, is idle work or keeps no
    KV). Taking the full window drops the short one's state: the full one is warm now."""
    if request.short_prompt is None or request.doc_id is None or not request.reuse_kv:
        return None
    if request.idle:  # filling the full window is what idle work is for
        return None
    key = short_key(request.doc_id)
    full = missing(docs.get(request.doc_id), prompt)
    if full <= MARGIN:
        docs.forget(key, save=False)  # a stand-in: never worth a disk block
        return None
    short = encode_window(request.short_prompt)
    if not short or full <= missing(docs.get(key), short) + MARGIN:
        docs.forget(key, save=False)  # a stand-in: never worth a disk block
        return None
    return short


def short_first(
    request: GenerationRequest,
    prompt: list[int],
    docs: DocumentStates,
    encode_window: Callable[[str], list[int]],
    drafting: bool = False,
) -> list[int] | None:
    """For idle work over a cold full window that carries its cursor's short window (a resting
    cursor's warm-up, the fill after a short answer): the short window's prompt ids when a
    request there would be answered over it (`choose`) and its KV lacks `SHORT_FIRST_MIN` tokens
    or more, the target's or (`drafting`: a draft model drafts) the draft model's, so that the
    warm-up prefills it before the full window (seconds longer). Else None. The draft's lag
    matters because requests over a short window leave a cold draft aside (its catch-up costs
    more than it saves within a request) and the short window's draft is caught up nowhere else."""
    if request.short_prompt is None or request.doc_id is None or not request.reuse_kv:
        return None
    if not request.idle:
        return None
    full = missing(docs.get(request.doc_id), prompt)
    if full <= MARGIN:
        return None
    short = encode_window(request.short_prompt)
    if not short:
        return None
    state = docs.get(short_key(request.doc_id))
    lacks = missing(state, short)
    if full <= lacks + MARGIN:
        return None
    behind = lacks
    if drafting and state is not None and isinstance(state.draft, ModelState):
        behind = max(behind, len(short) - common_prefix_len(state.draft.tokens, short))
    elif drafting and state is not None:  # no draft KV yet (a feature head has none to lag)
        behind = max(behind, len(short) if state.draft is None else 0)
    return short if behind >= SHORT_FIRST_MIN else None


def short_request(request: GenerationRequest) -> GenerationRequest:
    """The request as the short window's: its own KV state (a document's short window)."""
    assert request.doc_id is not None
    return replace(request, doc_id=short_key(request.doc_id))
