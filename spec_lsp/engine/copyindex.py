"""The copy index: every token sequence the engine holds, indexed once, shared across requests.

What it holds (`CopyIndex`), per server process (one user's): each document's latest context
(its prompt window, which already carries the prefix, the suffix and the other files' chunks the
completion layer chose, plus what was generated after it) and the document's last few outputs
(generations, shown or not), as sources keyed by (document, kind). A document's context is kept
in step with the one being decoded (`sync`: the common prefix stays indexed, only the tail is
indexed again), so a keystroke costs the tokens it changed, not the window. Sources are evicted
oldest first beyond `budget` tokens; a closed document's go at once (`forget`). The index only
ever sees prompts the completion layer built, which never hold a private or excluded file.

How it is searched (`Candidates`): the context's last `ANCHORS[0]` tokens (else its last one)
are looked up in each source's table of n-gram end positions (the `SCAN` most recent per source),
and each hit is measured backwards: its match length. Walking forward, every candidate votes
for the token that follows its match, weighted by the square of its match length; the winner is
proposed, the candidates that disagree drop out, the others' matches grow by one. A proposed
token's chance of acceptance is read from `Calibration`, by (match length, agreement) bucket,
learned from the target's verdicts with a prior; `gate.best_run` prices the run.

Numpy only; knows nothing of models, LSP or the completion layer.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

ANCHOR = 3  # lookups key on the last 3 tokens (matches of 3 or more); else the live context's last
MAX_MATCH = 32  # a match is measured backwards up to this many tokens
SCAN = 16  # the most recent hits per source a lookup measures
OUTPUTS = 8  # outputs kept per document
LEAD = 8  # tokens of context kept before an output, so that its start can be matched
BITS = 21  # token ids below 2**21: three pack exactly into one 63-bit key
GAP = (1 << BITS) - 1  # between a document's outputs: in no key a query makes
Key = tuple[str | None, str]  # (document, "context" | "outputs")


def _keys(tokens: np.ndarray) -> np.ndarray:
    """[n]: at index e - 1, the key of the 3 tokens that end at e (-1 for e < 3)."""
    keys = np.full(len(tokens), -1, dtype=np.int64)
    if len(tokens) >= ANCHOR:
        keys[2:] = (tokens[:-2] << (2 * BITS)) | (tokens[1:-1] << BITS) | tokens[2:]
    return keys


class Source:
    """A token sequence and the 3-token key ending at each position, sorted on demand (stably,
    so each key's positions come in increasing order). Numpy throughout: updating a 1,500-token
    window costs tens of microseconds, where a dict of positions costs a dict operation a token."""

    __slots__ = ("tokens", "keys", "_order", "_sorted")

    def __init__(self, tokens: list[int] | None = None) -> None:
        self.tokens = np.asarray(tokens or [], dtype=np.int64) & GAP
        self.keys = _keys(self.tokens)
        self._order: np.ndarray | None = None
        self._sorted = self.keys

    @classmethod
    def of(cls, tokens: np.ndarray) -> Source:
        source = cls()
        source.tokens, source.keys = tokens, _keys(tokens)
        return source

    def __len__(self) -> int:
        return len(self.tokens)

    def sync(self, tokens: list[int]) -> None:
        """Holds `tokens`: the keys of the common prefix stay, the tail's are computed again."""
        new = np.asarray(tokens, dtype=np.int64) & GAP
        n = min(len(new), len(self.tokens))
        diff = np.flatnonzero(self.tokens[:n] != new[:n])
        same = int(diff[0]) if len(diff) else n
        if same == len(self.tokens) == len(new):
            return
        lo = max(0, same - ANCHOR + 1)  # the keys from `same` on read tokens from `lo` on
        self.keys = np.concatenate([self.keys[:same], _keys(new[lo:])[same - lo :]])
        self.tokens, self._order = new, None

    def ends(self, key: int) -> np.ndarray:
        """The end positions, increasing, of the 3-grams whose key is `key`."""
        if self._order is None:
            self._order = np.argsort(self.keys, kind="stable")
            self._sorted = self.keys[self._order]
        lo, hi = np.searchsorted(self._sorted, [key, key + 1])
        return self._order[lo:hi] + 1

    def nbytes(self) -> int:
        order = self._order.nbytes + self._sorted.nbytes if self._order is not None else 0
        return self.tokens.nbytes + self.keys.nbytes + order


@dataclass
class Candidate:
    tokens: np.ndarray  # the source's
    at: int  # the position of the token this candidate proposes next
    length: int  # tokens matched before `at`


class CopyIndex:
    """The sources, least recently updated first, within `budget` tokens; and the calibration
    of proposals, shared by every request."""

    def __init__(self, budget: int = 131072) -> None:
        self.budget = budget
        self.sources: OrderedDict[Key, Source] = OrderedDict()
        self.outputs: dict[str | None, list[list[int]]] = {}
        self.calibration = Calibration()
        self.tokens = 0
        # Every other document's sources joined in one (GAP between them), so that a lookup
        # costs the same with 2 documents or 80; rebuilt when one of them changes.
        self._others: Source | None = None
        self._others_of: str | None = None  # the document they leave out

    def sync(self, doc: str | None, context: list[int]) -> Source:
        """The document's context source, holding `context` (made if new)."""
        key = (doc, "context")
        source = self.sources.pop(key, None) or Source()
        self.tokens -= len(source)
        source.sync(context)
        self._put(key, source)
        return source

    def add_output(self, doc: str | None, lead: list[int], output: list[int]) -> None:
        """A finished generation, after `LEAD` tokens of what preceded it, to the document's
        last `OUTPUTS`; one already kept (a prefetch, then the request that took it) is not
        kept twice."""
        tokens = lead[-LEAD:] + output
        kept = self.outputs.setdefault(doc, [])
        if not output or tokens in kept:
            return
        kept[:] = kept[-OUTPUTS + 1 :] + [tokens]
        joined = [t for out in kept for t in (*out, GAP)]
        old = self.sources.pop((doc, "outputs"), None)
        self.tokens -= len(old) if old is not None else 0
        self._put((doc, "outputs"), Source(joined))

    def forget(self, doc: str | None) -> None:
        for key in [key for key in self.sources if key[0] == doc]:
            self._drop(key)

    def clear(self) -> None:
        self.sources.clear()
        self.outputs.clear()
        self.tokens, self._others = 0, None

    def nbytes(self) -> int:
        others = self._others.nbytes() if self._others is not None else 0
        return others + sum(source.nbytes() for source in self.sources.values())

    def _put(self, key: Key, source: Source) -> None:
        self.sources[key] = source
        self.tokens += len(source)
        self._changed(key)
        while self.tokens > self.budget and len(self.sources) > 1:
            self._drop(next(iter(self.sources)))

    def _drop(self, key: Key) -> None:
        self.tokens -= len(self.sources.pop(key))
        if key[1] == "outputs":
            self.outputs.pop(key[0], None)
        self._changed(key)

    def _changed(self, key: Key) -> None:
        if key[0] != self._others_of:
            self._others = None

    def others(self, doc: str | None) -> Source:
        """Every source of the other documents, joined."""
        if self._others is None or self._others_of != doc:
            parts = [s.tokens for key, s in self.sources.items() if key[0] != doc]
            gap = np.array([GAP], dtype=np.int64)
            joined = np.concatenate([t for p in parts for t in (p, gap)]) if parts else gap
            self._others, self._others_of = Source.of(joined), doc
        return self._others

    def candidates(self, query: list[int], live: Source, doc: str | None = None) -> list[Candidate]:
        """Where the end of `query` occurs with a continuation, in `live` (the context being
        decoded, whose own end is no candidate), the document's other sources and the other
        documents' (`SCAN` hits each, `4 * SCAN` in the others), each hit with its match
        length: hits of the last 3 tokens anywhere, else of the last token in `live`."""
        if not query:
            return []
        back = np.asarray(query[-1 : -MAX_MATCH - 1 : -1], dtype=np.int64) & GAP  # [m] reversed
        found: list[Candidate] = []
        if len(query) >= ANCHOR:
            key = int(_keys(back[ANCHOR - 1 :: -1])[-1])
            own = [s for k, s in self.sources.items() if k[0] == doc and s is not live]
            for scan, source in (
                (SCAN, live),
                *((SCAN, s) for s in own),
                (4 * SCAN, self.others(doc)),
            ):
                ends = source.ends(key)[-scan - 1 :]
                found += _measured(source.tokens, ends[ends < len(source)][-scan:], back)
        if not found:
            ends = np.flatnonzero(live.tokens[:-1] == back[0])[-SCAN:] + 1
            found = _measured(live.tokens, ends, back)
        return found


def _measured(tokens: np.ndarray, ends: np.ndarray, back: np.ndarray) -> list[Candidate]:
    """The hits ending at `ends`, each with how many tokens before it equal `back` (the query's
    last tokens, last first), up to MAX_MATCH."""
    if not len(ends):
        return []
    idx = ends[:, None] - 1 - np.arange(len(back))[None, :]  # [h, m] positions, walking back
    same = (tokens[np.maximum(idx, 0)] == back[None, :]) & (idx >= 0)
    lengths = np.cumprod(same, axis=1).sum(axis=1)
    return [Candidate(tokens, int(e), int(n)) for e, n in zip(ends, lengths, strict=True)]


LENGTHS = (1, 2, 4, 8, 16)  # match length buckets: 1, 2, 3-4, 5-8, 9-16, 17 and more
# Agreement buckets: 0 one candidate, 1 several all agreeing, 2 a majority (>= 0.6 of the
# weight), 3 split. Priors: a token's chance of acceptance per length bucket, then a factor.
PRIOR = (0.25, 0.4, 0.55, 0.7, 0.8, 0.9)
AGREEMENT = (1.0, 1.1, 0.9, 0.6)
PRIOR_WEIGHT = 4.0  # the prior counts as this many verdicts
DECAY = 0.98  # weight of a bucket's earlier verdicts after each new one


def bucket(length: int, share: float, voters: int) -> int:
    b = sum(length > edge for edge in LENGTHS)
    agree = 0 if voters == 1 else 1 if share >= 1.0 else 2 if share >= 0.6 else 3
    return 4 * b + agree


class Calibration:
    """P(a proposed token is accepted | the ones before it were) per bucket: decayed counts of
    the target's verdicts over a prior."""

    def __init__(self) -> None:
        n = len(PRIOR) * len(AGREEMENT)
        self.hits = [min(0.97, PRIOR[b // 4] * AGREEMENT[b % 4]) * PRIOR_WEIGHT for b in range(n)]
        self.trials = [PRIOR_WEIGHT] * n

    def prob(self, b: int) -> float:
        return self.hits[b] / self.trials[b]

    def verdict(self, b: int, accepted: bool) -> None:
        self.hits[b] = DECAY * self.hits[b] + float(accepted)
        self.trials[b] = DECAY * self.trials[b] + 1.0

    def record(self, buckets: list[int], accepted: int) -> None:
        """A verified proposal: its first `accepted` tokens accepted, the next one rejected,
        the rest never judged."""
        for i, b in enumerate(buckets[: accepted + 1]):
            self.verdict(b, i < accepted)


def walk(candidates: list[Candidate], calibration: Calibration, k: int) -> list[tuple[int, int]]:
    """Up to k (token, bucket) pairs: at each step the token the candidates' weight favours
    (each votes with its match length squared), the disagreeing candidates dropped."""
    run: list[tuple[int, int]] = []
    while candidates and len(run) < k:
        votes: dict[int, float] = {}
        longest: dict[int, int] = {}
        for c in candidates:
            token = int(c.tokens[c.at])
            if token == GAP:  # the end of one of a document's outputs
                continue
            votes[token] = votes.get(token, 0.0) + min(c.length, MAX_MATCH) ** 2
            longest[token] = max(longest.get(token, 0), c.length)
        if not votes:
            break
        token = max(votes, key=votes.__getitem__)
        share = votes[token] / sum(votes.values())
        run.append((token, bucket(longest[token], share, len(candidates))))
        candidates = [
            Candidate(c.tokens, c.at + 1, c.length + 1)
            for c in candidates
            if int(c.tokens[c.at]) == token and c.at + 1 < len(c.tokens)
        ]
    return run
