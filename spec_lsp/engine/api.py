"""The engine's contract: a request in, streamed text and stats out, a cancellation token.

This module owns the small types every backend shares, what a backend declares it can do
(`Capabilities`), why a generation stopped (`StopReason`), and the one list of each name a preset
or a client may choose (speculation methods, weight formats, forwards). It imports no torch, so
the server, the presets and protocol-only tests use them without loading a model. A remote
backend (vLLM, llama.cpp's server) stands in for the local engine by implementing `Backend`;
`BackendBase` gives the optional parts their defaults (do nothing, report nothing).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Literal, Protocol, get_args

# -- names: each defined here once, imported by config, presets and the engine --------------------
# How the engine drafts: not at all, n-gram lookup in the prompt, the draft model (or feature head),
# or lookup first and the draft model where lookup finds nothing.
DraftMethod = Literal["off", "ngram", "draft", "both"]
METHODS: tuple[DraftMethod, ...] = get_args(DraftMethod)
MODEL_METHODS: tuple[DraftMethod, ...] = ("draft", "both")  # the methods that run a draft model


def as_method(name: str) -> DraftMethod:
    """`name` as the `DraftMethod` it is (a setting already checked against METHODS)."""
    for method in METHODS:
        if method == name:
            return method
    raise ValueError(f"unknown drafting method {name!r} (one of {', '.join(METHODS)})")


# What a client may ask for (`speculation`): "auto" (the preset's own method) or a method, in the
# order the editors' settings list them.
SPECULATION: tuple[str, ...] = ("auto", "ngram", "draft", "both", "off")
# How a preset stores a device's weights (`engine.quant` packs the integer ones).
WeightFormat = Literal["float32", "bfloat16", "int8", "int4"]
WEIGHT_FORMATS: tuple[WeightFormat, ...] = get_args(WeightFormat)
FLOAT_FORMATS: tuple[WeightFormat, ...] = ("float32", "bfloat16")
# The forward a preset asks for (`engine.forward`): the engine's own lean one, or transformers'.
ForwardName = Literal["lean", "transformers"]
FORWARDS: tuple[ForwardName, ...] = get_args(ForwardName)

# Why a generation stopped; "" while it runs. "error": the backend failed (a remote engine down,
# a malformed answer): the result is empty and must not be cached or shown.
StopReason = Literal["", "max_tokens", "eos", "stop_string", "callback", "cancelled", "error"]
STOP_REASONS: tuple[StopReason, ...] = get_args(StopReason)

# The stop callback, defined here once for every layer: called with the text generated so far,
# it returns the length of text to keep when the syntactic unit is complete (generation stops
# there), or None to go on.
StopFn = Callable[[str], "int | None"]
# Called with each new piece of decoded text as it is generated.
TextCallback = Callable[[str], None]


class CancelToken:
    """Set by the scheduler when a request is superseded; checked by the engine between steps."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


@dataclass
class GenerationRequest:
    prompt: str  # the full prompt text (template applied by the prompt builder)
    doc_id: str | None = None  # KV state is kept per document; None disables reuse
    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop_strings: tuple[str, ...] = ()
    stop_callback: StopFn | None = None
    on_text: TextCallback | None = None
    cancel: CancelToken | None = None
    method: DraftMethod | None = None  # None: the engine's default
    reuse_kv: bool = True
    # The first token is the target's `first_rank`-th most likely instead (0: as decoded): the
    # branches of an explicit request's alternatives; the rest is decoded as usual.
    first_rank: int = 0
    # Prefill in passes of at most this many tokens (None: the engine's own chunk): a prefetch's
    # short passes let a real request that cancels it wait one short pass at most.
    prefill_chunk: int | None = None
    # Work on idle time that no one waits for (a warm-up, a catch-up): a draft model whose KV
    # lags the prompt catches up here, where a request (a prefetch too: the request after an
    # accept waits for it) leaves it aside unless that pays (`AdaptiveK.catch_up_pays`).
    idle: bool = False
    # Texts the output is expected to copy, most likely first (a next edit's old region with its
    # end marker, then text the user's recent edits inserted): the copy drafter proposes their
    # continuation from where the output stands in them, before the method's own sources; the
    # target verifies every token, so the output is the target's own. Such a request's KV is
    # kept apart from the completions' (a rewrite never evicts a document's completion window),
    # and it reports where the output departed from them (`GenerationResult.departures`).
    reference: tuple[str, ...] = ()
    # Called (in the worker thread) with each departure as it is found (`departures`).
    on_departure: Callable[[int, float], None] | None = None
    # The same request over a shorter window (no other files, a few hundred tokens before the
    # cursor): answered instead where the document's KV for `prompt` is cold, so a file's first
    # requests do not wait for its whole window's prefill (`cold.py`); idle work fills the
    # window meanwhile. A backend without per-document KV ignores it.
    short_prompt: str | None = None
    # The prompt ends in text the person typed, cut anywhere in a word (`healing.py`): the
    # engine may take its last token off and let the first token extend it (token healing); the
    # output still begins at the cursor. A backend that cannot ignores it.
    heal: bool = False


@dataclass
class GenerationStats:
    prompt_tokens: int = 0
    reused_tokens: int = 0  # prompt tokens whose KV came from the document's cached state
    # Tokens of the document's window whose KV was read from disk for this request (`kvdisk`;
    # then reused by it, or by the request after it where a short window answered this one).
    restored_tokens: int = 0
    prefilled_tokens: int = 0  # prompt tokens run through the target for this request
    generated_tokens: int = 0
    prefill_ms: float = 0.0
    draft_ms: float = 0.0
    verify_ms: float = 0.0
    total_ms: float = 0.0
    target_forwards: int = 0
    prefill_forwards: int = 0  # of those, the prompt's (the rest decoded: one token or a verify)
    proposed_tokens: int = 0
    accepted_tokens: int = 0
    rejections: int = 0  # draft rounds that ended on a rejected token
    draft_rounds: int = 0  # rounds that verified drafted tokens
    gated_rounds: int = 0  # rounds decoded plainly because drafting would not pay (the gate)
    draft_forwards: int = 0  # draft model (or head) passes, the ones whose tokens went unused too
    confidence_stops: int = 0  # rounds whose draft stopped under its confidence threshold
    # Prompt tokens the draft model's KV lacked when its gate left it aside for this request
    # (0: it drafted, or there is no draft model): idle work can catch it up (`idle`).
    draft_lag: int = 0
    short_window: bool = False  # answered over `short_prompt` (the window was cold)
    method: str = "off"  # the DraftMethod that ran; a remote backend's label
    stop_reason: StopReason = ""
    tokens_per_s: float = 0.0

    @property
    def failed(self) -> bool:
        """The backend failed: its time is no decode latency, its empty text no answer."""
        return self.stop_reason == "error"

    @property
    def acceptance(self) -> float | None:
        return self.accepted_tokens / self.proposed_tokens if self.proposed_tokens else None

    @property
    def token_acceptance(self) -> float | None:
        """Chance that a drafted token is accepted given that the ones before it were: the
        per-token rate `a` of the speedup formula (accepted / (accepted + rejections))."""
        seen = self.accepted_tokens + self.rejections
        return self.accepted_tokens / seen if seen else None

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = asdict(self)
        d["acceptance"] = self.acceptance
        d["token_acceptance"] = self.token_acceptance
        return d


@dataclass
class GenerationResult:
    text: str
    token_ids: list[int] = field(default_factory=list)
    stats: GenerationStats = field(default_factory=GenerationStats)
    # With a `reference`: each place where the output's token is not the references' next one
    # where the output stands in them (the copy drafter's walk, token by token), as (index in
    # `token_ids`, or its length for an end of text; the target's probability of its token
    # there): how sure the model was of each departure from the old text (a next edit's
    # confidence). The same whatever the drafting, speculation off included.
    departures: list[tuple[int, float]] = field(default_factory=list)

    @property
    def cancelled(self) -> bool:
        return self.stats.stop_reason == "cancelled"

    @property
    def failed(self) -> bool:
        return self.stats.failed


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do beyond generating, declared by each backend class; the service asks
    these instead of probing for attributes. Each flag names the `Backend` method it turns on
    where there is one (`BackendBase` gives those methods their do-nothing defaults)."""

    # Stops a superseded generation within one step and keeps the KV it computed: requests need
    # no debounce, and a prefetch that only prefills is worth starting (the local engine).
    cheap_cancel: bool = False
    # Prefills a document's prompt head when it opens (`completion.anticipate.warm_up`): needs a
    # cheap cancel too. A remote engine warms its own prompt cache (`remote_warmups`).
    warm_up: bool = False
    # Takes other files' chunks apart from the prompt (`other_files`; llama-server's input_extra).
    other_files: bool = False
    # Reports whether it can be reached and why not (`status`; a remote engine).
    status: bool = False
    # Reports the engine's own counters (`engine_stats`; a remote engine's /metrics).
    engine_stats: bool = False
    # Sends prompt-only warm-ups for superseded requests and counts them (`warmup_stats`).
    remote_warmups: bool = False


# The other files' chunks that lead a prompt: (file name, text), in the order they are rendered.
FileChunks = tuple[tuple[str, str], ...]


class Backend(Protocol):
    """What the server needs from an engine; the local speculative engine is one."""

    @property
    def capabilities(self) -> Capabilities: ...

    def generate(self, request: GenerationRequest) -> GenerationResult:
        """Blocking; call from a worker thread. Stops within one step of `cancel`. A failure is
        a result with stop reason "error" (remote) or an exception (the worker answers it)."""
        ...

    def count_tokens(self, text: str) -> int: ...

    def forget(self, doc_id: str) -> None:
        """Drops a document's cached KV state (on didClose)."""
        ...

    def persist(self, timeout_s: float) -> bool:
        """The server ends: every document's KV goes where it outlives the process (the local
        engine's KV on disk), waiting up to `timeout_s` for the writes; whether they all were
        written (True where nothing is kept)."""
        ...

    def other_files(self, doc_id: str, head: str, chunks: FileChunks) -> None:
        """The other files' text `head` that leads the document's next prompts, and the chunks
        rendered in it (`Capabilities.other_files`)."""
        ...

    def status(self) -> dict[str, object] | None:
        """Whether the engine can be reached, and why not (`Capabilities.status`)."""
        ...

    def engine_stats(self) -> dict[str, object] | None:
        """The engine's own counters, None until read (`Capabilities.engine_stats`)."""
        ...

    def warmup_stats(self) -> dict[str, int] | None:
        """Prompt-only warm-ups sent (`Capabilities.remote_warmups`)."""
        ...


class BackendBase:
    """The optional parts of `Backend` with their defaults: no capability, and methods that do
    nothing or report nothing. A backend subclasses it and overrides what its `capabilities`
    declare (tests/engine/test_backend_contract.py holds every backend to that)."""

    capabilities = Capabilities()

    def other_files(self, doc_id: str, head: str, chunks: FileChunks) -> None:
        return None

    def persist(self, timeout_s: float) -> bool:
        return True

    def status(self) -> dict[str, object] | None:
        return None

    def engine_stats(self) -> dict[str, object] | None:
        return None

    def warmup_stats(self) -> dict[str, int] | None:
        return None


# Which `BackendBase` method each capability turns on (none: a flag for the service alone).
CAPABILITY_METHODS: dict[str, str | None] = {
    "cheap_cancel": None,
    "warm_up": None,
    "other_files": "other_files",
    "status": "status",
    "engine_stats": "engine_stats",
    "remote_warmups": "warmup_stats",
}
