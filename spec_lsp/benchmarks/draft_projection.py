"""What a draft would buy, projected from counts: acceptance along the target's greedy path and the
measured costs of the passes (no timed decoding; `draft_study` gathers the inputs).

Greedy speculation accepts a drafted token only if every token before it in the round was
accepted, and then the draft saw exactly the target's greedy context. So one record per position
of the target's greedy continuation, "the draft's top-1 there equals the target's" (`match`) and
"the draft's top-1 probability there" (`conf`), decides every round exactly: a round at position t
proposes up to k tokens, accepts the leading matches, and emits one more (the target's own token
after the last accepted one). Where the draft stops on a confidence threshold, the records after
its first miss stand in for the probabilities it would see off the greedy path (the tokens it
would get accepted are exact; the count of draft steps is that proxy's).

A round costs its draft steps plus a target pass over m + 1 rows (m proposed); target-only costs
one one-row pass per token. The projected speedup is target-only time over speculative time for
the same tokens:

    speedup = tokens * verify[1 row] / sum over rounds (steps * draft_step + verify[m + 1 rows])
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Track:
    """One draft's records along one prompt's greedy continuation, position by position."""

    match: tuple[bool, ...]  # its top-1 equals the target's
    conf: tuple[float, ...]  # its top-1 probability


@dataclass(frozen=True)
class Costs:
    """Milliseconds: `verify[r - 1]` a target pass over r rows; `draft_step` one draft step."""

    verify: tuple[float, ...]
    draft_step: float


@dataclass(frozen=True)
class Projection:
    k: int
    threshold: float
    tokens: int
    rounds: int
    proposed: int
    accepted: int
    speedup: float

    @property
    def tokens_per_round(self) -> float:
        return self.tokens / max(1, self.rounds)


def leading(match: tuple[bool, ...], start: int, count: int) -> int:
    """How many of match[start : start + count] hold before the first that does not."""
    n = 0
    while n < count and start + n < len(match) and match[start + n]:
        n += 1
    return n


def mean_run(tracks: list[Track], k: int) -> float:
    """The expected accepted run of a draft of k tokens proposed at a position (no threshold)."""
    runs = [leading(t.match, i, k) for t in tracks for i in range(len(t.match))]
    return sum(runs) / max(1, len(runs))


def agreement(tracks: list[Track], threshold: float = 0.0) -> tuple[float, float]:
    """(share of positions whose confidence is >= threshold, top-1 agreement among them)."""
    kept = [m for t in tracks for m, c in zip(t.match, t.conf, strict=True) if c >= threshold]
    total = sum(len(t.match) for t in tracks)
    return len(kept) / max(1, total), sum(kept) / max(1, len(kept))


def project(tracks: list[Track], costs: Costs, k: int, threshold: float = 0.0) -> Projection:
    """Rounds of at most k drafted tokens along each track, stopping where the draft's confidence
    falls under `threshold` (the step that found it low is paid for)."""
    if k + 1 > len(costs.verify):
        raise ValueError(f"k = {k} needs the cost of a pass over {k + 1} rows")
    tokens = rounds = proposed = accepted = 0
    spent = 0.0
    for track in tracks:
        t, length = 0, len(track.match)
        while t < length:
            cap = min(k, length - t)
            m = 0
            while m < cap and track.conf[t + m] >= threshold:
                m += 1
            steps = m + (1 if m < cap else 0)  # the step whose confidence stopped the run
            a = leading(track.match, t, m)
            spent += steps * costs.draft_step + costs.verify[m]
            tokens += a + 1
            rounds += 1
            proposed += m
            accepted += a
            t += a + 1
    speedup = tokens * costs.verify[0] / spent if spent else 1.0
    return Projection(k, threshold, tokens, rounds, proposed, accepted, speedup)


def best(tracks: list[Track], costs: Costs, ks: range, thresholds: list[float]) -> Projection:
    """The draft length and threshold that project the largest speedup."""
    return max(
        (project(tracks, costs, k, th) for k in ks for th in thresholds), key=lambda p: p.speedup
    )


def iid_speedup(alpha: float, step: float, verify: tuple[float, ...]) -> tuple[float, int]:
    """(best speedup, its k) of a draft whose tokens are each accepted with probability `alpha`
    independently of one another, one step costing `step` one-row passes; `verify[r - 1]` a pass
    over r rows in one-row passes. A round of k emits 1 + alpha + ... + alpha^k tokens on average
    (what a feature head or any other draft would have to reach, before it is built)."""
    found = (1.0, 0)
    for k in range(1, len(verify)):
        tokens = sum(alpha**i for i in range(k + 1))
        found = max(found, (tokens / (k * step + verify[k]), k))
    return found
