"""Whether a round drafts, and how far: every round priced on measured costs, per document.

On a GPU a verification pass over k + 1 tokens costs about what one token costs, and drafting
nearly always pays. On a CPU it does not: a target pass over 8 tokens costs 3.6-5x one, and a
same-family draft model costs a large share of the target per token (Qwen2.5-Coder 0.5B for the
1.5B: 1/1.6; llama-server's draft speculation with that pair decoded 4x slower than the target
alone). So a round is priced on the target's measured pass costs `cost[n - 1]` (a pass over n
tokens, `timing.pass_costs`) and the draft's measured step cost `d` (`timing.draft_step_cost`;
n-gram lookup is free):

    a round with budget k:  tokens = 1 + (c a) + (c a)^2 + ... + (c a)^k
                            cost   = d * E[draft steps] + E[cost[drafts proposed]]
    plain decoding:         one token per cost[0]
    gain(k) = tokens * cost[0] / cost                                   (`AdaptiveK.gain`)

`a` is the per-token acceptance (a drafted token is accepted given that the ones before it
were) and `c` the chance that the draft goes on after a step rather than stopping under its
confidence threshold (a stop spends a step and proposes nothing for it); both are decayed
estimates over the recent rounds. `AdaptiveK` drafts the k of the best gain. When that gain is
under `min_gain` the source steps aside: plain decoding for `backoff` tokens, then one probe
round, the wait doubling after each probe that does not pay (up to `backoff_max`). A draft model
closed when a request starts sits that request out (`Gates.begin`): it is not prefilled, and
its probe waits for the next request's prefill. A source whose gain stays under `min_gain` even
at full acceptance never drafts (`can_pay`), and a draft model is then never prefilled.

The copy index (`copyindex`, the "ngram" source by default) is priced differently: its lookup
costs nothing and it knows a chance for each token it could propose (calibrated by match length
and agreement), so its gate (`IndexK`) never steps aside and the drafter cuts each run where the
same gain, with a chance per token instead of one estimate, is best (`best_run`).

Without a measured curve (tests, `measure_verify = false`) there is no gate: k grows after
fully accepted drafts and shrinks after rejections. `Gates` keeps the state per (document,
method, source); `plan_round` asks the sources in order (n-gram lookup first for "both") and
`record` feeds the outcome back and counts it in the request's stats.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from spec_lsp.engine.api import DraftMethod, GenerationStats
from spec_lsp.engine.timing import draft_step_cost

if TYPE_CHECKING:
    from spec_lsp.engine.cache import DraftState
    from spec_lsp.engine.options import EngineOptions
    from spec_lsp.engine.proposal import Drafter, Proposal

log = logging.getLogger(__name__)

DECAY = 0.8  # weight of the earlier rounds in the acceptance estimates, after each round
SOURCES = {"ngram": ("ngram",), "draft": ("draft",), "both": ("ngram", "draft")}
RUN_FLOOR = 0.3  # without a cost curve, a copy run goes on while its chance stays at least this


class AdaptiveK:
    """Draft length, and whether to draft at all, from recent acceptance and measured costs."""

    def __init__(
        self,
        k: int,
        k_min: int = 1,
        k_max: int = 16,
        cost: tuple[float, ...] = (),
        draft_cost: float = 0.0,
        min_gain: float = 1.0,
        backoff: int = 16,
        backoff_max: int = 256,
    ) -> None:
        self.k_min, self.k_max = k_min, k_max
        self.k = max(k_min, min(k, k_max))
        # cost[n - 1]: a target pass over n tokens (the pending one and n - 1 drafts), any unit;
        # draft_cost: one draft step, in the same unit.
        self.cost = cost if len(cost) > k_max else ()
        self.draft_cost, self.min_gain = draft_cost, min_gain
        self.backoff_min, self.backoff_max = backoff, max(backoff, backoff_max)
        self._accepted, self._misses = 1.0, 1.0  # decayed counts; prior acceptance rate 0.5
        self._goes, self._stops = 1.0, 0.0  # decayed counts; prior: the draft never stops itself
        self.wait = 0  # tokens to decode plainly before the next probe
        self.held = False  # closed for the whole of the current request (`Gates.begin`)
        self._backoff = backoff
        self.can_pay = not self.cost or self.best(1.0, 1.0)[1] >= min_gain
        if self.cost:
            self.k = self.best_k()

    @property
    def acceptance(self) -> float:
        return self._accepted / (self._accepted + self._misses)

    @property
    def goes_on(self) -> float:
        return self._goes / (self._goes + self._stops)

    @property
    def closed(self) -> bool:
        """Decode plainly this round: drafting cannot pay, or it waits to probe again."""
        return not self.can_pay or self.wait > 0 or self.held

    def skipped(self, tokens: int) -> None:
        """`tokens` were decoded while this source stood aside."""
        self.wait = max(0, self.wait - tokens)

    def update(self, proposed: int, accepted: int, steps: int = 0) -> None:
        """After a round: `proposed` drafts, `accepted` of them, `steps` draft passes run (0 for
        a lookup; one more than `proposed` when the draft stopped under its confidence)."""
        if not self.cost:
            if proposed == 0:
                return
            self.k = (
                min(self.k + 2, self.k_max) if accepted == proposed else max(self.k - 1, self.k_min)
            )
            return
        if steps:  # each step either proposed a token or stopped the draft
            self._goes = DECAY * self._goes + proposed
            self._stops = DECAY * self._stops + max(0, steps - proposed)
        if proposed:
            # A draft is accepted token by token until the first miss: with per-token acceptance
            # rate a, the accepted count over the misses estimates a / (1 - a).
            self._accepted = DECAY * self._accepted + accepted
            self._misses = DECAY * self._misses + int(accepted < proposed)
        elif not steps:
            return
        self.k, gain = self.best(self.acceptance, self.goes_on)
        if gain >= self.min_gain:
            self._backoff = self.backoff_min
        else:  # step aside, and wait longer after each probe that does not pay
            self.wait, self._backoff = self._backoff, min(2 * self._backoff, self.backoff_max)

    def catch_up_pays(self, lag: int, room: int) -> bool:
        """Whether prefilling `lag` prompt tokens into the draft's KV pays within a request that
        may decode `room` more tokens: the draft's prefill, priced as the target's per token
        scaled by the draft step's share of a target pass, against the time drafting is expected
        to save at the current estimates. A draft whose KV is cold sits a request out (a cold
        1,000-token prompt costs the 0.5B draft seconds to save a fraction of 64 tokens' time);
        idle-time work (a warm-up, a prefetch) catches it up instead. A lag that costs no more
        than one plain decoding step always pays: the keys typed since idle work caught the
        draft up. Without that, a draft whose estimates say it does not pay (its prior, before
        any round) would sit out every request whose prompt moved by a key, and never run the
        rounds that would show otherwise. No curve, or a gate told to draft at no gain
        (`min_gain` <= 1): always."""
        if not self.cost or lag <= 0 or self.min_gain <= 1.0:
            return True
        per_token = self.draft_cost * (self.cost[-1] / len(self.cost)) / self.cost[0]
        if lag * per_token <= self.cost[0]:
            return True
        gain = self.best(self.acceptance, self.goes_on)[1]
        saved = room * self.cost[0] * (1.0 - 1.0 / gain) if gain > 1.0 else 0.0
        return lag * per_token <= saved

    def best_k(self) -> int:
        """argmax over k of E[tokens from one round with budget k] / cost of that round."""
        return self.best(self.acceptance, self.goes_on)[0]

    def best(self, a: float, c: float) -> tuple[int, float]:
        k = max(range(self.k_min, self.k_max + 1), key=lambda k: self.gain(k, a, c))
        return k, self.gain(k, a, c)

    def gain(self, k: int, a: float, c: float = 1.0) -> float:
        """Expected speedup over plain decoding of a round with budget k (see the module doc)."""
        cost = self.cost
        tokens = 1.0 + sum((c * a) ** i for i in range(1, k + 1))  # accepted drafts + 1
        steps = sum(c ** (i - 1) for i in range(1, k + 1))  # step i runs if i - 1 were proposed
        # j drafts proposed: the draft stopped at step j + 1 (or j = k, it never stopped).
        verify = sum(c**j * (1 - c) * cost[j] for j in range(k)) + c**k * cost[k]
        return tokens * cost[0] / (self.draft_cost * steps + verify)


class IndexK(AdaptiveK):
    """The copy index's gate: every round may draft up to `k_max`, and it never steps aside.
    The drafter prices each run itself (`best_run`, from calibrated per-token chances), a
    lookup costs next to nothing, and a round it prices at nothing decodes plainly."""

    def __init__(self, k_max: int) -> None:
        super().__init__(k_max, 1, k_max)  # no cost curve: never closed

    def update(self, proposed: int, accepted: int, steps: int = 0) -> None:
        return None

    def skipped(self, tokens: int) -> None:
        return None


def best_run(probs: list[float], cost: tuple[float, ...], min_gain: float = 1.0) -> int:
    """How many tokens of a run to propose, `probs[i]` being the chance that token i is accepted
    given that the ones before it were: the n of the best expected speedup

        (1 + P_1 + ... + P_n) * cost[0] / cost[n],   P_i = probs[0] * ... * probs[i - 1]

    over plain decoding (`AdaptiveK.gain` with a chance per token), 0 when no n reaches
    `min_gain`. Without a curve (tests): while P_n stays at least `RUN_FLOOR`."""
    best, best_gain, p, tokens = 0, min_gain, 1.0, 1.0
    for n, q in enumerate(probs[: len(cost) - 1] if cost else probs, 1):
        p *= q
        if not cost:
            if p < RUN_FLOOR:
                break
            best = n
            continue
        tokens += p
        gain = tokens * cost[0] / cost[n]
        if gain >= best_gain:
            best, best_gain = n, gain
    return best


def measured_draft_cost(options: EngineOptions, draft: Any) -> float:
    """One draft step, in the unit of `verify_cost`: the option's, else timed now (with a
    curve to weigh it against), else 0 (no curve: no gate)."""
    if options.draft_cost > 0 or draft is None or not options.verify_cost:
        return options.draft_cost
    return draft_step_cost(draft)


class Gates:
    """An `AdaptiveK` per (document, method, source); the least recently used dropped first."""

    def __init__(self, options: EngineOptions, size: int = 64) -> None:
        self.options, self.size = options, size
        self._docs: OrderedDict[tuple[str | None, str], dict[str, AdaptiveK]] = OrderedDict()

    def make(self, source: str) -> AdaptiveK:
        o = self.options
        if source == "ngram" and o.copy_index_tokens > 0:
            return IndexK(o.k_max)  # the copy index prices its own runs
        draft_cost = o.draft_cost if source == "draft" else 0.0
        return AdaptiveK(
            o.k,
            1,
            o.k_max,
            o.verify_cost,
            draft_cost,
            o.min_gain,
            o.backoff_tokens,
            o.backoff_max_tokens,
        )

    def draft_pays(self, draft: Any) -> bool:
        """Whether a draft (model or head) can pay at all, were it always accepted."""
        pays = draft is not None and self.make("draft").can_pay
        if draft is not None and not pays:
            log.info("the draft costs more than it can save on this machine: n-gram lookup only")
        return pays

    def begin(self, doc_id: str | None, method: DraftMethod) -> dict[str, AdaptiveK]:
        """A request's sources, in the order they are asked. A draft model closed at the start
        stays closed for the whole request even when its wait ends: it is not prefilled then,
        and its probe comes after the next request's prefill (chunked, cancellable) instead of
        catching up over the whole prompt inside a draft step."""
        key = (doc_id, method)
        ctl = self._docs.pop(key, None) or {s: self.make(s) for s in SOURCES.get(method, ())}
        self._docs[key] = ctl
        while len(self._docs) > self.size:
            self._docs.popitem(last=False)
        if "draft" in ctl:
            ctl["draft"].held = False
            ctl["draft"].held = ctl["draft"].closed
        return ctl

    def forget(self, doc_id: str) -> None:
        for key in [key for key in self._docs if key[0] == doc_id]:
            del self._docs[key]


@dataclass
class Round:
    proposal: Proposal | None = None  # None: no source drafted
    ctl: AdaptiveK | None = None  # the source that drafted (or tried to)
    gated: list[AdaptiveK] = field(default_factory=list)  # sources that stood aside

    @property
    def tokens(self) -> list[int]:
        return self.proposal.tokens if self.proposal is not None else []

    @property
    def probs(self) -> torch.Tensor | None:  # [k, Vd] the drafts' distributions (sampling)
        return self.proposal.probs if self.proposal is not None else None


def plan_round(
    sources: list[tuple[Drafter, AdaptiveK]],
    context: list[int],
    room: int,
    draft_state: DraftState | None,
    temperature: float,
    generator: torch.Generator | None,
) -> Round:
    """Asks the open sources in order for up to their k drafts (leaving room for the target's
    own token); the first that drafts, or spends a draft step trying, has the round."""
    gated = []
    for drafter, ctl in sources:
        if ctl.closed:
            gated.append(ctl)
            continue
        k = min(ctl.k, room - 1)
        proposal = drafter.propose(context, k, draft_state, temperature, generator)
        if proposal.tokens or proposal.steps:
            return Round(proposal, ctl, gated)
    return Round(None, None, gated)


def record(stats: GenerationStats, rnd: Round, accepted: int, emitted: int) -> None:
    """Feeds a verified round back to its source and counts it in `stats`."""
    drafts, steps = len(rnd.tokens), rnd.proposal.steps if rnd.proposal is not None else 0
    stats.draft_forwards += steps
    stats.confidence_stops += int(steps > drafts)
    if drafts:
        stats.draft_rounds += 1
        stats.proposed_tokens += drafts
        stats.accepted_tokens += accepted
        stats.rejections += int(accepted < drafts)
    elif not steps and rnd.gated:
        stats.gated_rounds += 1
    if rnd.ctl is not None:
        rnd.ctl.update(drafts, accepted, steps)
    for ctl in rnd.gated:
        ctl.skipped(emitted)
