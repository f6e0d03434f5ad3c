"""The engine's options: drafting, draft lengths, the KV budgets, prefill chunks, the gate's costs.

Plain values with defaults; the loader fills the measured ones (`verify_cost`, `draft_cost`).
Its own module so that the gate and the loader read it without importing the engine loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from spec_lsp.engine.api import DraftMethod


@dataclass
class EngineOptions:
    method: DraftMethod = "ngram"  # default drafting method
    k: int = 6  # initial draft length
    k_max: int = 12
    ngram_max: int = 4  # the plain prompt lookup's longest n-gram (`copy_index_tokens` 0)
    # The "ngram" source's shared copy index (`copyindex`): its budget; 0: plain prompt lookup
    copy_index_tokens: int = 131072
    # A draft model's round stops under this top-1 probability (first token too): llama.cpp's
    draft_min_confidence: float = 0.75  # --draft-p-min default, not measured on a real pair here
    head_min_confidence: float = 0.5  # a feature head proposes nothing below this (first token too)
    max_docs: int = 8  # cached documents (LRU)
    max_cached_tokens: int = 0  # across documents and models; 0: derived from kv_budget_mb
    kv_budget_mb: float = 128.0  # memory for cached KV states across documents
    # Documents' KV kept on disk across closing them and restarting (`kvdisk`, lean forward only)
    kv_disk_mb: float = 2048.0  # its budget; 0: off
    kv_disk_dir: str = ""  # "": <cache root>/kv, unless the environment has SPEC_LSP_KV_DISK=off
    context_tokens: int = 2048  # longest prompt kept (left-truncated)
    # A long prefill runs in chunks (a cancellation check between them; the chunks done stay cached)
    prefill_chunk: int = 128  # ~0.6 s each for the bundled target on this project's 2-core CPU
    window_step: int = 256  # a prompt over context_tokens is cut in steps of this (`_window`)
    verify_cost: tuple[float, ...] = ()  # [n - 1]: ms of a target pass over n tokens (measured)
    # The draft gate (gate.py), only with a verify_cost:
    draft_cost: float = 0.0  # ms of one draft step (0: timed when the engine starts)
    min_gain: float = 1.1  # a source drafts while its expected speedup is at least this
    backoff_tokens: int = 16  # plain tokens before probing again, doubled after each failed probe
    backoff_max_tokens: int = 256
