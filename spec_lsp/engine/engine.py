"""The speculative decoding loop over resident models, with per-document KV reuse.

`SpecEngine.generate` tokenizes the prompt, reuses the document's cached KV for the longest common
token prefix, prefills only the tail (`_prefill`), then repeats `_speculative_step`: draft k
tokens, verify them with one target forward, accept the approved ones plus the target's own next
token. Stop conditions (max tokens, EOS, stop strings, the external stop callback, cancellation)
are applied token by token on what the target accepted (`_emit`), so the output is token-for-token
the target's own greedy decoding.
Knows nothing of LSP, editors, grammars or preset files; the stop callback is an opaque function.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from spec_lsp.engine import api, cold, kvdisk
from spec_lsp.engine.api import DraftMethod, GenerationRequest, GenerationResult, GenerationStats
from spec_lsp.engine.cache import (
    DocState,
    DocumentStates,
    ModelState,
    advance_chunked,
    common_prefix_len,
    tokens_for_budget,
    window,
)
from spec_lsp.engine.copyindex import LEAD, CopyIndex
from spec_lsp.engine.decoding import Decoding, emit
from spec_lsp.engine.drafters import (
    CopyDrafter,
    CopyK,
    HeadDrafter,
    HeadDraftState,
    IndexDrafter,
    ModelDrafter,
    NgramDrafter,
)
from spec_lsp.engine.forward import Forwards
from spec_lsp.engine.gate import AdaptiveK, Gates, measured_draft_cost, plan_round, record
from spec_lsp.engine.head import SpecHead
from spec_lsp.engine.healing import Healer, constrain
from spec_lsp.engine.lean import Interrupted, interruptible
from spec_lsp.engine.options import EngineOptions as EngineOptions  # the engine's knobs
from spec_lsp.engine.proposal import Drafter
from spec_lsp.engine.verify import greedy_accept, probs_from_logits, rejection_accept
from spec_lsp.engine.vocabulary import eos_ids

# Copy drafts' lengths: up to passes of 32 rows, where AMX takes whole tiles of 16 (a 33rd row
# would be a pass over the weights of its own on the vectors); a rewrite starts at the longest
# (its first lines are most often copied: 9% fewer one-row passes' worth of time than starting at
# 16 on 16 next-edit cases, docs/benchmarks.md).
COPY_K, COPY_K_MIN, COPY_K_MAX = 31, 4, 31
REWRITE_DOCS = 2  # documents whose rewrite KV is kept
Source = tuple[Drafter, AdaptiveK]  # a drafter and its gate


class SpecEngine(api.BackendBase):
    capabilities = api.Capabilities(cheap_cancel=True, warm_up=True)  # stops in a step, keeps KV

    def __init__(
        self,
        target: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        draft: PreTrainedModel | SpecHead | None = None,
        options: EngineOptions | None = None,
        name: str = "",
        forwards: Forwards | None = None,
    ) -> None:
        self.target, self.draft, self.tokenizer = target, draft, tokenizer
        # The forward each model runs with and the kernels under them, chosen once at load
        # (`forward.choose_forward`); an engine built from bare models runs transformers'.
        self.forwards = forwards or Forwards.of(target, draft)
        self.forward, self.kernels = self.forwards.name, self.forwards.kernels  # for status
        # A feature head drafts from the target's hidden states instead of running on its own.
        self.head = draft if isinstance(draft, SpecHead) else None
        self.draft_model = None if isinstance(draft, SpecHead) else draft
        self.options = options or EngineOptions()
        timed = self.forwards.draft or draft  # a draft model's forward, or the feature head
        self.options = replace(self.options, draft_cost=measured_draft_cost(self.options, timed))
        self.name, self.weights = name, str(target.dtype).removeprefix("torch.")  # loading sets
        self.tokenizer_source = ""  # where loading took the tokenizer from (a stand-in's says so)
        self.device = str(target.device)
        self.vocab_limit: int | None = None  # random weights: a vocabulary under the tokenizer's
        self._healer: Healer | None = None  # built at the first prompt healed (`healing.py`)
        max_tokens = self.options.max_cached_tokens or tokens_for_budget(self, self.options)
        self.docs = DocumentStates(self.options.max_docs, max_tokens, kvdisk.for_engine(self))
        # Rewrites (requests with a `reference`) keep their KV apart, one document's window.
        self.rewrites = DocumentStates(REWRITE_DOCS, self.options.context_tokens + 512)
        self._ngram = NgramDrafter(self.options.ngram_max)  # without the copy index
        self.copies = CopyIndex(self.options.copy_index_tokens)  # shared by the "ngram" rounds
        self._model_drafter: ModelDrafter | HeadDrafter = (
            HeadDrafter(self.options.head_min_confidence)
            if self.head is not None
            else ModelDrafter(self.options.draft_min_confidence)
        )
        self.gates = Gates(self.options)  # draft or not, and how far, per document and method
        self.draft_pays = self.gates.draft_pays(draft)  # False: never drafts (nor prefills)
        self.eos_ids = eos_ids(tokenizer, target.generation_config)  # `vocabulary.eos_ids`

    # -- Backend interface -------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        return len(self.encode(text))

    def forget(self, doc_id: str) -> None:
        self.docs.forget(doc_id)
        self.docs.forget(cold.short_key(doc_id), save=False)
        self.rewrites.forget(doc_id)
        self.gates.forget(doc_id)
        self.copies.forget(doc_id)

    def persist(self, timeout_s: float) -> bool:
        """Every document's KV on disk (`kvdisk`; a short window's is a stand-in, never kept),
        waiting up to `timeout_s` for the writes."""
        self.docs.save_all(keep=lambda doc_id: not cold.is_short_key(doc_id))
        return self.docs.flush(timeout_s)

    def encode(self, text: str) -> list[int]:
        ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        if self.vocab_limit is not None:
            ids = [i % self.vocab_limit for i in ids]
        return ids

    def decode(self, ids: list[int]) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=False))

    @property
    def methods(self) -> list[DraftMethod]:
        return [m for m in api.METHODS if self.draft is not None or m not in api.MODEL_METHODS]

    def generate(self, request: GenerationRequest) -> GenerationResult:
        t0 = time.perf_counter()
        method = request.method or self.options.method
        if method in api.MODEL_METHODS and not self.draft_pays:
            method = "ngram"
        stats = GenerationStats(method=method)
        run = Decoding(request, stats)
        prompt = self._window(request.prompt)
        if not prompt or request.max_new_tokens <= 0:
            stats.stop_reason = "max_tokens"
            return GenerationResult("", [], stats)
        # KV from disk where it holds more of the prompt than the document's own (kvdisk): a file
        # reopened, a server restarted, a document whose KV holds its top's warm-up
        doc_id = request.doc_id if request.reuse_kv else None
        stats.restored_tokens = self._store(request).restore(doc_id, prompt)
        if (short := cold.choose(request, prompt, self.docs, self._window)) is not None:
            if request.doc_id is not None and method != "off" and self.options.copy_index_tokens:
                # The copy drafter searches the document's whole window, not the short one alone
                self.copies.sync(request.doc_id, prompt)
            prompt, stats.short_window = short, True  # a cold window: its short one answers
        ahead = (0, 0.0)  # tokens and ms of a short window prefilled ahead of the prompt
        drafting = self.draft is not None and method in api.MODEL_METHODS
        first = (
            None if short else cold.short_first(request, prompt, self.docs, self._window, drafting)
        )
        if first is not None:
            ready, ahead = self._prefill_short(run, first, method)  # idle: the short window first
            if not ready:
                stats.prompt_tokens, (stats.prefilled_tokens, stats.prefill_ms) = len(first), ahead
                stats.total_ms = (time.perf_counter() - t0) * 1000
                stats.stop_reason = "cancelled"
                return GenerationResult("", [], stats)
        allowed = None
        if request.heal and (healed := self.healing().heal(prompt)) is not None:
            prompt, run.skip, allowed = healed.prompt, healed.text, healed.allowed
        stats.prompt_tokens = len(prompt)
        state = self._doc_state(cold.short_request(request) if short else request, method)
        generator = None
        if request.temperature > 0:
            generator = torch.Generator(device="cpu")
            generator.manual_seed(
                request.seed if request.seed is not None else int(time.time_ns()) & 0xFFFFFFFF
            )
        try:
            self._decode(run, state, prompt, method, generator, allowed)
        finally:
            if request.doc_id is not None and request.reuse_kv:
                self._store(request).evict(keep=request.doc_id)
        if request.doc_id is not None and method != "off" and self.options.copy_index_tokens:
            self.copies.add_output(request.doc_id, prompt[-LEAD:], run.generated)
        stats.prefilled_tokens += ahead[0]
        stats.prefill_ms += ahead[1]
        stats.total_ms = (time.perf_counter() - t0) * 1000
        decode_s = (stats.total_ms - stats.prefill_ms) / 1000
        stats.tokens_per_s = stats.generated_tokens / decode_s if decode_s > 0 else 0.0
        return GenerationResult(run.text, run.generated, stats, run.departures)

    # -- internals -----------------------------------------------------------------------------

    def healing(self) -> Healer:
        """The vocabulary table token healing uses (`healing.py`), for the current vocabulary."""
        if self._healer is None or self._healer.vocab_limit != self.vocab_limit:
            self._healer = Healer(self.tokenizer, self.vocab_limit)
        return self._healer

    def _window(self, text: str) -> list[int]:
        return window(self.encode(text), self.options.context_tokens, self.options.window_step)

    def _store(self, request: GenerationRequest) -> DocumentStates:
        return self.rewrites if request.reference else self.docs

    def _draft_state(self, target: ModelState) -> ModelState | HeadDraftState:
        if self.head is not None:
            return HeadDraftState(self.head, target)
        assert self.forwards.draft is not None
        return ModelState(self.forwards.draft)

    def _doc_state(self, request: GenerationRequest, method: DraftMethod) -> DocState:
        drafting = self.draft is not None and method in api.MODEL_METHODS
        features = self.head is not None  # the head reads the target's features
        if request.doc_id is None or not request.reuse_kv:
            target = ModelState(self.forwards.target, features)
            return DocState(target, self._draft_state(target) if drafting else None)
        store = self._store(request)
        state = store.get(request.doc_id)
        if state is None:
            state = DocState(ModelState(self.forwards.target, features), None)
            store.put(request.doc_id, state)
        if drafting and state.draft is None:
            state.draft = self._draft_state(state.target)
        return state

    def _decode(
        self,
        run: Decoding,
        state: DocState,
        prompt: list[int],
        method: DraftMethod,
        generator: torch.Generator | None,
        allowed: torch.Tensor | None = None,
    ) -> None:
        """Prefill, then speculative steps until a stop condition or cancellation. `allowed`:
        the ids the first token may take (a healed prompt's)."""
        refs = [self.encode(text) for text in run.request.reference]
        sources = self._sources(run.request, method, len(prompt), run.stats.short_window, refs)
        # Where the output departs from the references, token by token whatever the drafting
        # (a next edit's confidence): its own walk through them, apart from the copy drafter's.
        aligner = CopyDrafter(refs, 0) if refs else None  # it reads the output alone
        drafting = any(d is self._model_drafter and not c.closed for d, c in sources)
        if drafting and isinstance(state.draft, ModelState) and not run.request.idle:
            # A draft whose KV lags the prompt sits a request out unless catching up pays.
            ctl = next(c for d, c in sources if d is self._model_drafter)
            lag = len(prompt) - common_prefix_len(state.draft.tokens, prompt)
            if not ctl.catch_up_pays(lag, run.request.max_new_tokens):
                ctl.held, drafting, run.stats.draft_lag = True, False, lag
        logits = self._prefill(run, state, prompt, drafting)
        if logits is None:
            return
        if allowed is not None:
            logits = constrain(logits[-1], allowed)[None]
        first = self._sample(logits, run.request, generator, run.request.first_rank)[0]
        self._emit(run, [first], logits[-1:], aligner)
        while not run.done and not self._cancelled(run):
            context = prompt + run.generated
            step, rows = self._speculative_step(run, state, context, sources, generator)
            self._emit(run, step, rows, aligner)

    def _emit(
        self,
        run: Decoding,
        tokens: list[int],
        logits: torch.Tensor,
        aligner: CopyDrafter | None,
    ) -> None:
        """`emit`s the tokens a round approved (`logits[i]` scored `tokens[i]`); with
        references, each token the output took, its end of text included, is checked against
        the references' next token where the output stands in them: a different one is a
        departure. Checked token by token, so the departures are the same whatever the draft
        schedule, speculation off included."""
        before = len(run.generated)
        emit(run, self.decode, self.eos_ids, tokens)
        if aligner is None:
            return
        taken = len(run.generated) - before + int(run.stats.stop_reason == "eos" and run.done)
        for i, token in enumerate(tokens[:taken]):
            expected = aligner.propose(run.generated[: before + i], 1, None, 0.0, None).tokens
            if expected and expected[0] != token:
                self._departed(run, before + i, logits[i], token)

    def _prefill(
        self, run: Decoding, state: DocState, prompt: list[int], drafting: bool = True
    ) -> torch.Tensor | None:
        """`_passes`; for idle work, stopped within a pass (between two layers) once cancelled,
        so that the request that cancels it waits a layer, not a pass: the pass stopped is lost,
        the ones before it stay cached."""
        if not run.request.idle:
            return self._passes(run, state, prompt, drafting)
        t = time.perf_counter()
        try:
            with interruptible((self.forwards.target, self.forwards.draft), self._stop(run)):
                return self._passes(run, state, prompt, drafting)
        except Interrupted:
            run.stats.prefill_ms = (time.perf_counter() - t) * 1000
            run.stats.prefilled_tokens = max(0, len(state.target) - run.stats.reused_tokens)
            return None

    def _prefill_short(
        self, run: Decoding, prompt: list[int], method: DraftMethod
    ) -> tuple[bool, tuple[int, float]]:
        """Idle work's short window ahead of its full one (`cold.short_first`): the KV for it
        under the short key, the target's and the draft model's where it drafts, as the first
        request there would prefill it. Whether it is there (not cancelled: what it computed
        stays either way), its tokens and ms."""
        short = Decoding(cold.short_request(run.request), run.stats)  # its stats are the run's
        state = self._doc_state(short.request, method)
        ready = self._prefill(short, state, prompt) is not None
        stats = run.stats
        ahead = (stats.prefilled_tokens, stats.prefill_ms)
        stats.prefilled_tokens, stats.prefill_ms, stats.reused_tokens = 0, 0.0, 0
        return ready and not self._cancelled(run), ahead

    def _stop(self, run: Decoding) -> Callable[[], bool]:
        return lambda: self._cancelled(run)

    def _passes(
        self, run: Decoding, state: DocState, prompt: list[int], drafting: bool = True
    ) -> torch.Tensor | None:
        """Runs only the tail of `prompt` that differs from the cached state, in chunks with a
        cancellation check between them; the logits of its last position [1, V], None when
        cancelled (the chunks done stay cached). A request's `prefill_chunk` can be shorter.
        A draft model's KV too, unless its gate keeps it aside for this request (`drafting`)."""
        stats = run.stats
        if self._cancelled(run):
            return None
        t = time.perf_counter()
        reused = min(common_prefix_len(state.target.tokens, prompt), len(prompt) - 1)
        stats.reused_tokens = reused
        done, chunk = reused, max(1, run.request.prefill_chunk or self.options.prefill_chunk)
        while len(prompt) - done > chunk:
            done += chunk
            state.target.advance(prompt[:done], keep=1)
            stats.target_forwards += 1
            stats.prefill_forwards += 1
            if self._cancelled(run):
                stats.prefill_ms = (time.perf_counter() - t) * 1000
                stats.prefilled_tokens = done - reused
                return None
        adv = state.target.advance(prompt, keep=1)
        stats.target_forwards += 1
        stats.prefill_forwards += 1
        # A draft model's KV for the prompt: prefill too, in chunks that a cancel stops.
        draft = state.draft if isinstance(state.draft, ModelState) and drafting else None
        ready = draft is None or advance_chunked(draft, prompt, chunk, lambda: self._cancelled(run))
        stats.prefill_ms = (time.perf_counter() - t) * 1000
        stats.prefilled_tokens = len(prompt) - reused
        stand_in = cold.is_short_key(run.request.doc_id or "")  # a short window's: never kept
        if run.request.idle and stats.prefilled_tokens >= kvdisk.COLD_PREFILL and not stand_in:
            self.docs.save(state)  # a cold window filled on idle time: on disk too
        return adv.logits if ready else None

    def _speculative_step(
        self,
        run: Decoding,
        state: DocState,
        context: list[int],
        sources: list[Source],
        generator: torch.Generator | None,
    ) -> tuple[list[int], torch.Tensor]:
        """draft -> verify -> accept: the tokens the target approves this round (the accepted
        draft tokens, then the target's own next token), and the logits that scored each."""
        req, stats = run.request, run.stats
        # Draft: up to k tokens from the first open source, leaving room for the target's token.
        t = time.perf_counter()
        room = req.max_new_tokens - len(run.generated)
        rnd = plan_round(sources, context, room, state.draft, req.temperature, generator)
        stats.draft_ms += (time.perf_counter() - t) * 1000
        drafts = rnd.tokens
        # Verify: one target forward over the drafts; logits [k + 1, V], row i scores the token
        # after context + drafts[:i].
        t = time.perf_counter()
        logits = state.target.advance(context + drafts, keep=len(drafts) + 1).logits
        stats.verify_ms += (time.perf_counter() - t) * 1000
        stats.target_forwards += 1
        # Accept: the longest approved prefix of the drafts, plus one token from the target.
        if req.temperature > 0:
            probs = probs_from_logits(logits, req.temperature, req.top_p)
            accepted, emitted = rejection_accept(drafts, rnd.probs, probs, generator)
        else:
            accepted, emitted = greedy_accept(drafts, logits)
        record(stats, rnd, accepted, len(emitted))  # feeds the gate back, counts the round
        return emitted, logits[: len(emitted)]

    def _departed(self, run: Decoding, index: int, logits: torch.Tensor, token: int) -> None:
        """The output's token `token` at `index` is not the references' next one: the target's
        probability of it."""
        p = float(torch.softmax(logits.float(), dim=-1)[token])  # [V] -> the target's token
        run.departures.append((index, p))
        if run.request.on_departure is not None:
            run.request.on_departure(index, p)

    def _sources(
        self,
        req: GenerationRequest,
        method: DraftMethod,
        start: int,
        short: bool,
        refs: list[list[int]],
    ) -> list[Source]:
        """The drafters a method asks in order, each with its gate: a request's references'
        copy first (speculative edits), then the copy index (or plain n-gram lookup), then the
        draft model. A short window's context is searched but not kept (a part of the full)."""
        o, keep = self.options, req.doc_id is not None and not (short or req.reference)
        lookup: Drafter = self._ngram
        if o.copy_index_tokens > 0:
            lookup = IndexDrafter(self.copies, req.doc_id, keep, o.verify_cost, o.min_gain)
        drafters: dict[str, Drafter] = {"ngram": lookup, "draft": self._model_drafter}
        out: list[Source] = [
            (drafters[s], c) for s, c in self.gates.begin(req.doc_id, method).items()
        ]
        if refs and method != "off":  # `refs`: the request's references, tokenized
            out.insert(0, (CopyDrafter(refs, start), CopyK(COPY_K, COPY_K_MIN, COPY_K_MAX)))
        return out

    def _sample(
        self, logits: torch.Tensor, req: GenerationRequest, gen: torch.Generator | None, rank=0
    ) -> list[int]:
        if req.temperature > 0:
            probs = probs_from_logits(logits, req.temperature, req.top_p)
            return [int(torch.multinomial(probs[-1], 1, generator=gen))]
        return [int(logits[-1].topk(rank + 1).indices[rank]) if rank else int(logits[-1].argmax())]

    def _cancelled(self, run: Decoding) -> bool:
        cancel = run.request.cancel
        if cancel is not None and cancel.cancelled:
            run.stats.stop_reason = "cancelled"
            run.done = True
            return True
        return False
