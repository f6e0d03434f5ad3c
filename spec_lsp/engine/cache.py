"""Per-model KV state with longest-common-prefix reuse, and the per-document LRU of such states.

A `ModelState` holds one model's KV cache and the exact token ids the cache covers. Every forward
goes through `advance(tokens)`: the state keeps the longest common prefix of what it holds and
`tokens`, drops the rest (rollback after a rejected draft is the same operation), and runs only the
new tail. Because the caller always passes the *canonical* tokenization of its full context, BPE
merges that move near the cursor are handled for free: a token whose text changed simply stops
matching, and the tail from there is re-evaluated. The forward that runs a model is the one the
engine chose for it at load (`forward.Forward`: the lean one or transformers'), handed in.

Knows nothing about drafting, tokenizers or documents' text.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from spec_lsp.engine.forward import Forward, as_forward


def common_prefix_len(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    # Compare in chunks first: prompts share long prefixes, so this is the common case.
    step = 64
    while i + step <= n and a[i : i + step] == b[i : i + step]:
        i += step
    while i < n and a[i] == b[i]:
        i += 1
    return i


def kv_bytes_per_token(model: Any, dtype: torch.dtype | None = None) -> int:
    """Bytes of KV cache (keys and values, every layer) one token costs `model`, in the dtype its
    cache holds (its forward's `kv_dtype`: float16 for the lean forward over GGUF blocks; by
    default the model's)."""
    dtype = dtype or model.dtype
    config = model.config
    cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
    heads = getattr(cfg, "num_attention_heads", 1)
    kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return int(2 * cfg.num_hidden_layers * kv_heads * head_dim * dtype.itemsize)


def tokens_for_budget(engine: Any, options: Any) -> int:
    """Cached tokens that fit in `options.kv_budget_mb` of KV (keys + values, every layer, of the
    engine's target and draft model, in the dtypes their forwards cache; a feature head's recorded
    target features), bounded below so that one full-context document always fits."""
    forwards = engine.forwards
    per_token = kv_bytes_per_token(engine.target, forwards.target.kv_dtype)
    if engine.draft_model is not None and forwards.draft is not None:
        per_token += kv_bytes_per_token(engine.draft_model, forwards.draft.kv_dtype)
    if engine.head is not None:  # the target's recorded features, one vector per token
        per_token += engine.head.config.hidden_size * engine.target.dtype.itemsize
    return max(int(options.kv_budget_mb * 2**20 / per_token), options.context_tokens + 256)


def window(ids: list[int], context_tokens: int, step: int) -> list[int]:
    """The last `context_tokens` of a prompt, cut in steps of `step` tokens: a cut by the exact
    count would shift the first token at every keystroke and no KV could be reused; this one
    stays put until the prompt grows by another step."""
    over = len(ids) - context_tokens
    if over <= 0:
        return ids
    return ids[-(-over // max(1, step)) * max(1, step) :]


def advance_chunked(
    state: ModelState, tokens: list[int], chunk: int, stop: Callable[[], bool]
) -> bool:
    """Makes `state` cover `tokens` in passes of at most `chunk` new tokens, `stop()` checked
    before each; False when it stopped (the passes done stay cached)."""
    done = common_prefix_len(state.tokens, tokens)
    while done < len(tokens):
        if stop():
            return False
        done = min(len(tokens), done + chunk)
        state.advance(tokens[:done], keep=1)
    return True


@dataclass
class Advance:
    logits: torch.Tensor  # [keep, V] logits for the last `keep` positions of `tokens`
    hidden: torch.Tensor | None  # [keep, H] last hidden states, when asked for
    reused: int  # tokens whose KV came from the cache
    fed: int  # tokens run through the model


class ModelState:
    """One model's KV cache and the token ids it covers; with `features`, also the model's final
    hidden state at every covered position (what a feature draft head reads)."""

    def __init__(self, forward: Forward | torch.nn.Module, features: bool = False) -> None:
        # The forward the engine chose for the model at load (`forward.choose_forward`); a bare
        # model runs transformers' forward.
        self.forward: Forward = as_forward(forward)
        self._track = features
        # Tracked features live in a buffer that grows by doubling, so that appending the few
        # tokens of a keystroke or a verify step does not copy the whole context each time.
        self._buffer: torch.Tensor | None = None
        self.cache: Any = None  # the forward's own: a `LeanCache` or a `DynamicCache`
        self.tokens: list[int] = []

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def tracks_features(self) -> bool:
        return self._track

    @property
    def features(self) -> torch.Tensor | None:
        """[len(tokens), H] the final hidden state at every covered position, when tracked."""
        if self._buffer is None or not self.tokens:
            return None
        return self._buffer[: len(self.tokens)]

    def _store_features(self, start: int, new: torch.Tensor) -> None:
        end = start + new.shape[0]
        buf = self._buffer
        if buf is None or buf.shape[0] < end or buf.dtype != new.dtype:
            grown = new.new_empty(
                (max(end, 2 * (buf.shape[0] if buf is not None else 0)), new.shape[1])
            )
            if buf is not None and start > 0:
                grown[:start] = buf[:start]
            self._buffer = buf = grown
        buf[start:end] = new

    def reset(self) -> None:
        self.cache = None
        self.tokens = []
        self._buffer = None

    def truncate(self, length: int) -> None:
        """Keeps the first `length` cached tokens (rollback)."""
        if length >= len(self.tokens):
            return
        if length <= 0 or self.cache is None:
            self.reset()
            return
        self.cache.crop(-(len(self.tokens) - length))  # transformers 5: a negative count
        self.tokens = self.tokens[:length]

    @torch.inference_mode()
    def advance(self, tokens: list[int], keep: int = 1, hidden: bool = False) -> Advance:
        """Makes the cache cover `tokens` and returns logits of the last `keep` positions."""
        if not tokens:
            raise ValueError("advance() needs at least one token")
        keep = max(1, min(keep, len(tokens)))
        # At least the last `keep` tokens must run to produce their logits.
        reuse = min(common_prefix_len(self.tokens, tokens), len(tokens) - keep)
        self.truncate(reuse)
        if self.cache is None:
            self.cache = self.forward.new_cache()
        reuse = len(self.tokens)
        fed = tokens[reuse:]
        logits, last, every = self.forward.forward(fed, self.cache, keep, all_hidden=self._track)
        self.tokens = list(tokens)
        if every is not None:
            self._store_features(reuse, every)
        return Advance(logits=logits, hidden=last if hidden else None, reused=reuse, fed=len(fed))


class DraftState(Protocol):
    """A draft's per-document state: a `ModelState`, or a feature head's state."""

    def __len__(self) -> int: ...

    def reset(self) -> None: ...


@dataclass
class DocState:
    target: ModelState
    draft: DraftState | None

    def cached_tokens(self) -> int:
        return len(self.target) + (len(self.draft) if self.draft is not None else 0)


class Tier(Protocol):
    """Where a dropped document's KV goes and a new one's comes from (`kvdisk.DocDisk`)."""

    def save(self, state: DocState) -> None: ...

    def load(self, tokens: list[int], held: int = 0) -> DocState | None: ...

    def flush(self, timeout: float | None = None) -> bool: ...


class DocumentStates:
    """LRU of per-document KV states, bounded by document count and total cached tokens; with a
    `tier`, a document closed or evicted is saved there, and one without KV restored from it."""

    def __init__(self, max_docs: int, max_tokens: int, tier: Tier | None = None) -> None:
        self.max_docs = max_docs
        self.max_tokens = max_tokens
        self.tier = tier
        self._docs: OrderedDict[str, DocState] = OrderedDict()

    def __len__(self) -> int:
        return len(self._docs)

    def get(self, doc_id: str) -> DocState | None:
        state = self._docs.get(doc_id)
        if state is not None:
            self._docs.move_to_end(doc_id)
        return state

    def put(self, doc_id: str, state: DocState) -> None:
        self._docs[doc_id] = state
        self._docs.move_to_end(doc_id)

    def forget(self, doc_id: str, save: bool = True) -> None:
        """Drops a document's state (`save`: into the tier first, where there is one)."""
        state = self._docs.pop(doc_id, None)
        if state is not None and save:
            self.save(state)

    def save(self, state: DocState) -> None:
        """Puts `state`'s KV in the tier (none: nothing to do); it stays usable here."""
        if self.tier is not None:
            self.tier.save(state)

    def save_all(self, keep: Callable[[str], bool]) -> None:
        """Puts every document's KV for which `keep(doc_id)` in the tier (the server ends), the
        least recently used first (the tier's eviction then keeps the most recent)."""
        if self.tier is not None:
            for doc_id, state in list(self._docs.items()):
                if keep(doc_id):
                    self.tier.save(state)

    def flush(self, timeout: float) -> bool:
        """Waits up to `timeout` s for the tier's writes: whether they are all done."""
        return self.tier is None or self.tier.flush(timeout)

    def restore(self, doc_id: str | None, tokens: list[int]) -> int:
        """A document takes the longest prefix of `tokens` the tier holds where that is longer
        than what its own KV shares with them: a file reopened or a server restarted, and a
        document whose KV holds another window (the warm-up at its top, when the first request
        is further down); its state is replaced then. The tokens restored (0: none)."""
        if self.tier is None or doc_id is None:
            return 0
        state = self._docs.get(doc_id)
        held = 0 if state is None else common_prefix_len(state.target.tokens, tokens)
        loaded = self.tier.load(tokens, held)
        if loaded is None:
            return 0
        self.put(doc_id, loaded)
        return len(loaded.target)

    def clear(self) -> None:
        self._docs.clear()

    def total_tokens(self) -> int:
        return sum(s.cached_tokens() for s in self._docs.values())

    def evict(self, keep: str | None = None) -> None:
        """Drops least recently used documents until both bounds hold (never `keep`)."""
        while len(self._docs) > self.max_docs or self.total_tokens() > self.max_tokens:
            victim = next((d for d in self._docs if d != keep), None)
            if victim is None:
                state = self._docs[keep] if keep else None
                if state is not None and state.cached_tokens() > self.max_tokens:
                    self.save(state)
                    state.target.reset()
                    if state.draft is not None:
                        state.draft.reset()
                return
            self.forget(victim)
