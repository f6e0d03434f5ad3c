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

Pure Python and `array`; knows nothing of models, LSP or the completion layer.
"""

from __future__ import annotations

import sys
from array import array
from collections import OrderedDict
from dataclasses import dataclass

ANCHORS = (3, 1)  # table keys: the last 3 tokens (matches of 3 or more), else the last one
MAX_MATCH = 32  # a match is measured backwards up to this many tokens
SCAN = 16  # the most recent positions per key and source a lookup measures
OUTPUTS = 8  # outputs kept per document
LEAD = 8  # tokens of context kept before an output, so that its start can be matched
Key = tuple[str | None, str]  # (document, "context" | "output:<n>")


class Source:
    """A token sequence and, per anchor n, the end positions of its n-grams: `tables[i][h]`
    lists, in increasing order, each end e (n <= e <= len) whose last n tokens hash to h, so
    that truncating the sequence pops the tail of each list it touches."""

    __slots__ = ("tokens", "tables")

    def __init__(self, tokens: list[int] | None = None) -> None:
        self.tokens = array("q")
        self.tables: tuple[dict[int, array[int]], ...] = tuple({} for _ in ANCHORS)
        if tokens:
            self.extend(tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def extend(self, new: list[int]) -> None:
        tokens = self.tokens
        for token in new:
            tokens.append(token)
            end = len(tokens)
            for n, table in zip(ANCHORS, self.tables, strict=True):
                if end >= n:
                    h = _hash(tokens, end, n)
                    positions = table.get(h)
                    if positions is None:
                        table[h] = array("i", (end,))
                    else:
                        positions.append(end)

    def truncate(self, size: int) -> None:
        tokens = self.tokens
        for end in range(len(tokens), size, -1):
            for n, table in zip(ANCHORS, self.tables, strict=True):
                if end >= n:
                    h = _hash(tokens, end, n)
                    positions = table[h]
                    positions.pop()  # `end`: the largest position left under h
                    if not positions:
                        del table[h]
        del tokens[size:]

    def sync(self, tokens: list[int]) -> None:
        """Holds `tokens`: the common prefix stays indexed, the rest is indexed again."""
        same = _common_prefix(self.tokens, tokens)
        if same < len(self.tokens):
            self.truncate(same)
        if same < len(tokens):
            self.extend(tokens[same:])

    def nbytes(self) -> int:
        size = sys.getsizeof(self.tokens)
        for table in self.tables:
            size += sys.getsizeof(table) + sum(sys.getsizeof(p) for p in table.values())
        return size


def _hash(tokens: array[int], end: int, n: int) -> int:
    return tokens[end - 1] if n == 1 else hash(tuple(tokens[end - n : end]))


def _common_prefix(a: array[int], b: list[int]) -> int:
    n, i, step = min(len(a), len(b)), 0, 64
    while i + step <= n and a[i : i + step].tolist() == b[i : i + step]:
        i += step
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class Candidate:
    tokens: array[int]  # the source's
    at: int  # the position of the token this candidate proposes next
    length: int  # tokens matched before `at`


class CopyIndex:
    """The sources, least recently updated first, within `budget` tokens; and the calibration
    of proposals, shared by every request."""

    def __init__(self, budget: int = 131072) -> None:
        self.budget = budget
        self.sources: OrderedDict[Key, Source] = OrderedDict()
        self.calibration = Calibration()
        self.tokens = 0

    def sync(self, doc: str | None, context: list[int]) -> Source:
        """The document's context source, holding `context` (made if new)."""
        key = (doc, "context")
        source = self.sources.pop(key, None) or Source()
        self.tokens -= len(source)
        source.sync(context)
        self._put(key, source)
        return source

    def add_output(self, doc: str | None, lead: list[int], output: list[int]) -> None:
        """A finished generation, after `LEAD` tokens of what preceded it; an output already
        kept for the document (a prefetch, then the request that took it) is not kept twice."""
        if not output:
            return
        tokens = lead[-LEAD:] + output
        kept = [key for key in self.sources if key[0] == doc and key[1].startswith("output")]
        if any(self.sources[key].tokens.tolist() == tokens for key in kept):
            return
        for key in kept[: max(0, len(kept) - OUTPUTS + 1)]:
            self.tokens -= len(self.sources.pop(key))
        serial = 1 + max((int(key[1].split(":")[1]) for key in kept), default=0)
        self._put((doc, f"output:{serial}"), Source(tokens))

    def forget(self, doc: str | None) -> None:
        for key in [key for key in self.sources if key[0] == doc]:
            self.tokens -= len(self.sources.pop(key))

    def clear(self) -> None:
        self.sources.clear()
        self.tokens = 0

    def nbytes(self) -> int:
        return sum(source.nbytes() for source in self.sources.values())

    def _put(self, key: Key, source: Source) -> None:
        self.sources[key] = source
        self.tokens += len(source)
        while self.tokens > self.budget and len(self.sources) > 1:
            oldest = next(iter(self.sources))
            self.tokens -= len(self.sources.pop(oldest))

    def candidates(self, query: list[int], live: Source) -> list[Candidate]:
        """Where the end of `query` occurs with a continuation, in `live` (the context being
        decoded, whose own end is no candidate) and in every other source: the longest anchor
        that matches anywhere, each hit with its match length (at least the anchor's)."""
        others = [s for s in self.sources.values() if s is not live]
        for i, n in enumerate(ANCHORS):
            if len(query) < n:
                continue
            h = query[-1] if n == 1 else hash(tuple(query[-n:]))
            found = []
            for source in (live, *others):
                positions = source.tables[i].get(h)
                if positions is None:
                    continue
                tokens = source.tokens
                for end in positions[-SCAN:]:
                    if end < len(tokens):
                        length = _match(query, tokens, end)
                        if length >= n:
                            found.append(Candidate(tokens, end, length))
            if found:
                return found
        return []


def _match(query: list[int], tokens: array[int], end: int) -> int:
    """How many tokens before `end` in `tokens` equal the end of `query` (up to MAX_MATCH)."""
    most = min(MAX_MATCH, end, len(query))
    i = 0
    while i < most and tokens[end - 1 - i] == query[-1 - i]:
        i += 1
    return i


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
            token = c.tokens[c.at]
            votes[token] = votes.get(token, 0.0) + min(c.length, MAX_MATCH) ** 2
            longest[token] = max(longest.get(token, 0), c.length)
        token = max(votes, key=votes.__getitem__)
        share = votes[token] / sum(votes.values())
        run.append((token, bucket(longest[token], share, len(candidates))))
        candidates = [
            Candidate(c.tokens, c.at + 1, c.length + 1)
            for c in candidates
            if c.tokens[c.at] == token and c.at + 1 < len(c.tokens)
        ]
    return run
