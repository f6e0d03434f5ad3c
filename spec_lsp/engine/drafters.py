"""Drafters: propose the next k tokens cheaply; the target verifies them in one pass.

- `NgramDrafter`: prompt lookup. Finds the most recent earlier occurrence of the context's last n
  tokens (longest n first) and proposes what followed it. No model; strong on code, which repeats
  identifiers, call shapes and whole lines.
- `ModelDrafter`: a small draft model sharing the target's vocabulary, run autoregressively on its
  own per-document KV state. Stops as soon as its top-1 probability falls under `min_confidence`
  (before the first token too: on a CPU a verify pass over two tokens costs noticeably more than
  over one, so an unlikely draft is worse than none).
- `HeadDrafter`: a feature draft head (EAGLE-style, `head`) that reads the
  target's own last hidden states, recorded by the target's `ModelState`, and extrapolates them.
- `IndexDrafter`: the "ngram" source over the shared `copyindex.CopyIndex` (the context, other
  documents' windows, earlier outputs): proposes as many tokens as the match's calibrated
  confidence pays for at the measured verify costs (`gate.best_run`), none where it pays nothing.

Method "both" asks the n-gram lookup first and the draft model (or head) when lookup finds
nothing or stands aside (`gate.plan_round`). A `Proposal` also counts the draft passes it ran
(`steps`): what `gate.AdaptiveK`, which picks the draft length and whether to draft at all,
prices against the target's verification.
"""

from __future__ import annotations

import torch

from spec_lsp.engine.cache import DraftState, ModelState, common_prefix_len
from spec_lsp.engine.copyindex import CopyIndex, Source, walk
from spec_lsp.engine.gate import AdaptiveK as AdaptiveK  # the draft length: priced in gate.py
from spec_lsp.engine.gate import best_run
from spec_lsp.engine.head import HeadState, SpecHead
from spec_lsp.engine.proposal import Proposal
from spec_lsp.engine.verify import probs_from_logits


class NgramDrafter:
    name = "ngram"

    def __init__(self, max_ngram: int = 4, min_ngram: int = 1, window: int = 4096) -> None:
        self.max_ngram, self.min_ngram, self.window = max_ngram, min_ngram, window

    def lookup(self, context: list[int], k: int) -> list[int]:
        hay = context[-self.window :]
        n_ctx = len(hay)
        for n in range(min(self.max_ngram, n_ctx - 1), self.min_ngram - 1, -1):
            pattern = hay[-n:]
            first = pattern[0]
            # Most recent earlier occurrence whose continuation is non-empty.
            for start in range(n_ctx - n - 1, -1, -1):
                if hay[start] == first and hay[start : start + n] == pattern:
                    follow = hay[start + n : start + n + k]
                    if follow:
                        return follow
        return []

    def propose(
        self,
        context: list[int],
        k: int,
        draft_state: DraftState | None,
        temperature: float,
        generator: torch.Generator | None,
    ) -> Proposal:
        return Proposal(self.lookup(context, k), None, self.name)


class IndexDrafter:
    """One request's lookup in the shared copy index. The document's context source is kept in
    step with the context (`CopyIndex.sync`); a request without a document (or over a cold
    file's short window) searches its context privately and adds nothing to the index (for a
    short window, the engine has put the full window's prompt in the document's source). Each
    round's whole walk, proposed or not, is judged against the tokens the target emitted after
    it (at the next round), which teaches the calibration even the buckets priced out."""

    name = "ngram"

    def __init__(
        self, index: CopyIndex, doc: str | None, keep: bool, cost: tuple[float, ...], gain: float
    ) -> None:
        self.index, self.doc, self.keep = index, doc, keep
        self.cost, self.min_gain = cost, gain
        self._private = Source()
        self._pending: tuple[int, list[tuple[int, int]]] = (0, [])  # (where, the walk's pairs)

    def propose(
        self,
        context: list[int],
        k: int,
        draft_state: DraftState | None,
        temperature: float,
        generator: torch.Generator | None,
    ) -> Proposal:
        self._judge(context)
        if k <= 0:
            return Proposal([], None, self.name)
        if self.keep:
            live = self.index.sync(self.doc, context)
        else:
            live = self._private
            live.sync(context)
        calibration = self.index.calibration
        run = walk(self.index.candidates(context, live, self.doc), calibration, k)
        self._pending = (len(context), run)
        n = best_run([calibration.prob(b) for _, b in run], self.cost, self.min_gain)
        return Proposal([token for token, _ in run[:n]], None, self.name)

    def _judge(self, context: list[int]) -> None:
        """The previous walk against what the target emitted after it, to the first miss."""
        start, run = self._pending
        self._pending = (0, [])
        for i, (token, b) in enumerate(run[: max(0, len(context) - start)]):
            hit = context[start + i] == token
            self.index.calibration.verdict(b, hit)
            if not hit:
                break


class ModelDrafter:
    name = "draft"

    def __init__(self, min_confidence: float = 0.3) -> None:
        self.min_confidence = min_confidence

    def propose(
        self,
        context: list[int],
        k: int,
        draft_state: DraftState | None,
        temperature: float,
        generator: torch.Generator | None,
    ) -> Proposal:
        if not isinstance(draft_state, ModelState) or k <= 0:
            return Proposal([], None, self.name)
        tokens: list[int] = []
        dists: list[torch.Tensor] = []
        seq = list(context)
        for _ in range(k):
            logits = draft_state.advance(seq, keep=1).logits[-1]  # [Vd]
            if temperature > 0:
                q = probs_from_logits(logits[None], temperature)[0]
                token = int(torch.multinomial(q, 1, generator=generator))
                dists.append(q)
            else:
                q = torch.softmax(logits, dim=-1)
                token = int(q.argmax())
                # Low confidence: the target would likely reject; stop (the first token too).
                if float(q[token]) < self.min_confidence:
                    return Proposal(tokens, None, self.name, len(tokens) + 1)
            tokens.append(token)
            seq.append(token)
        probs = torch.stack(dists) if dists else None
        return Proposal(tokens, probs, self.name, len(tokens))


class HeadDraftState(HeadState):
    """A document's head state and the target state whose features it reads."""

    def __init__(self, head: SpecHead, target: ModelState) -> None:
        super().__init__(head)
        self.target = target


class HeadDrafter:
    """Drafts with a feature head. Pair i of the head is (target feature f_i, token x_{i+1}); the
    pairs whose tokens and features are unchanged since the last call stay in the head's cache,
    the new ones (the tokens accepted since) run in one step, then each further draft token feeds
    the head's own predicted feature back in. Predicted pairs are dropped afterwards."""

    name = "draft"

    def __init__(self, min_confidence: float = 0.3) -> None:
        self.min_confidence = min_confidence

    @torch.inference_mode()
    def propose(
        self,
        context: list[int],
        k: int,
        draft_state: DraftState | None,
        temperature: float,
        generator: torch.Generator | None,
    ) -> Proposal:
        state = draft_state
        if not isinstance(state, HeadDraftState) or k <= 0:
            return Proposal([], None, self.name)
        target = state.target
        feats = target.features
        if feats is None:
            return Proposal([], None, self.name)
        known = min(common_prefix_len(target.tokens, context), int(feats.shape[0]))
        pairs = min(known, len(context) - 1)
        # The last pair must be (f of the second-to-last token, the last token): the target's
        # features reach every context position but the last, whose token it has not seen yet.
        if pairs <= 0 or pairs != len(context) - 1:
            return Proposal([], None, self.name)
        valid = min(max(0, common_prefix_len(state.tokens, context) - 1), state.pairs, pairs - 1)
        state.crop(valid)
        if valid == 0:
            state.reset()
        head = state.head
        predicted = state.step(feats[valid:pairs], context[valid + 1 : pairs + 1], valid)
        state.tokens = list(context[: pairs + 1])
        tokens: list[int] = []
        dists: list[torch.Tensor] = []
        position, steps = pairs, 1  # the step over the new pairs predicted the first feature
        try:
            for i in range(k):
                logits = head.restricted_logits(predicted).float()  # [R]
                if temperature > 0:
                    full = head.scatter_full(logits)
                    q = probs_from_logits(full[None], temperature)[0]
                    token = int(torch.multinomial(q, 1, generator=generator))
                    dists.append(q)
                else:
                    q = torch.softmax(logits, dim=-1)
                    row = int(q.argmax())
                    # Unlike a draft model's, the head's first token is gated too: on a CPU a
                    # verify pass over two tokens costs noticeably more than over one, so an
                    # unlikely draft is worse than none.
                    if float(q[row]) < self.min_confidence:
                        break
                    token = int(head.vocab_ids[row])
                tokens.append(token)
                if i + 1 < k:
                    predicted = state.step(predicted[None], [token], position)
                    position, steps = position + 1, steps + 1
        finally:
            state.crop(pairs)  # keep only pairs built from the target's true features
        probs = torch.stack(dists) if dists else None
        return Proposal(tokens, probs, self.name, steps)


class CopyDrafter:
    """Speculative edits: proposes the text a rewrite is expected to copy (a next edit's old
    region, then other texts it may copy from), from where the output stands in it.

    `references` are token lists; `start` is the prompt's length, so `context[start:]` is the
    output so far. While the output follows a reference the drafter proposes that reference's
    next k tokens (the common case: nothing to search). After a departure (the target wrote
    something else) it re-synchronizes by finding the output's last n tokens in the references,
    the longest n first (`SYNC_MAX` down to 1), preferring the occurrence nearest after where
    the output last stood; a match of fewer than `SURE` tokens counts only a short way ahead of
    that place (one token such as a newline occurs everywhere). No match: it proposes nothing
    and the round decodes plainly (or the next source drafts)."""

    name = "copy"
    SYNC_MAX = 8
    SURE = 3
    NEAR = 24  # how far ahead of the last place a short match may re-synchronize

    def __init__(self, references: list[list[int]], start: int) -> None:
        self.refs = [r for r in references if r]
        self.start = start
        self._at = (0, 0)  # (reference, position): where the output stood after `_seen` tokens
        self._seen = 0

    def propose(
        self,
        context: list[int],
        k: int,
        draft_state: DraftState | None,
        temperature: float,
        generator: torch.Generator | None,
    ) -> Proposal:
        if not self.refs or k <= 0:
            return Proposal([], None, self.name)
        out = context[self.start :]
        at = self._locate(out)
        self._seen = len(out)
        if at is None:
            return Proposal([], None, self.name)
        self._at = at
        ref, pos = at
        return Proposal(self.refs[ref][pos : pos + k], None, self.name)

    def _locate(self, out: list[int]) -> tuple[int, int] | None:
        ref, pos = self._at
        new = out[self._seen :]
        if self.refs[ref][pos : pos + len(new)] == new:  # followed the reference
            return ref, pos + len(new)
        best: tuple[int, int, int] | None = None  # (distance, reference, end of the match)
        for n in range(min(self.SYNC_MAX, len(out)), 0, -1):
            pattern = out[-n:]
            for r, tokens in enumerate(self.refs):
                for end in _ends(tokens, pattern):
                    ahead = end - pos if r == ref else self.NEAR + end
                    if n < self.SURE and not 0 <= ahead <= self.NEAR:
                        continue
                    distance = ahead if ahead >= 0 else 4 * -ahead  # behind: a repeat, rarer
                    if best is None or distance < best[0]:
                        best = (distance, r, end)
            if best is not None:
                return best[1], best[2]
        return None


class CopyK(AdaptiveK):
    """The copy drafter's draft length, with the gate's interface (`plan_round`, `record`):
    doubled after a fully accepted copy (up to `k_max`: a rewrite copies long stretches), cut
    to twice what was accepted after a rejection (at least `k_min`: the copy is out of step,
    and a long rejected pass is the costly mistake). It never steps aside: a copy costs nothing
    to propose, and a round where it finds nothing decodes plainly."""

    def __init__(self, k: int, k_min: int, k_max: int) -> None:
        super().__init__(k, k_min, k_max)  # no cost curve: never closed

    def update(self, proposed: int, accepted: int, steps: int = 0) -> None:
        if proposed:
            full = accepted == proposed
            self.k = min(self.k_max, 2 * self.k) if full else max(self.k_min, 2 * accepted)

    def skipped(self, tokens: int) -> None:
        return None


def _ends(tokens: list[int], pattern: list[int]) -> list[int]:
    """The end positions of every occurrence of `pattern` in `tokens`."""
    n, first = len(pattern), pattern[0]
    return [
        i + n
        for i in range(len(tokens) - n + 1)
        if tokens[i] == first and tokens[i : i + n] == pattern
    ]
