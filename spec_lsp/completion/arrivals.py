"""Arrivals: the order of each document's requests, and how long to wait before running the model.

This module owns what is known of a request the moment it is read (the document version, its
number among the document's requests, the gap since the previous one) and the debounce that
follows from the typing rhythm. A request is current while it is its document's newest; an older
one is answered empty. It knows nothing of documents' text, the model or LSP.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

MAX_ADAPTIVE_DEBOUNCE_MS = 100.0


@dataclass(frozen=True)
class Arrival:
    """A request as it was when read: the document version and its order among the requests."""

    version: int
    seq: int
    t0: float
    gap_ms: float | None  # time since the document's previous request


class Arrivals:
    """Per document: the number of its newest request and when it came."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._seq: dict[str, int] = {}
        self._last_at: dict[str, float] = {}

    def arrive(self, uri: str, version: int) -> Arrival:
        now = self.clock()
        seq = self._seq[uri] = self._seq.get(uri, 0) + 1
        return Arrival(version, seq, now, self._note_gap(uri, now))

    def is_newest(self, uri: str, arrival: Arrival) -> bool:
        return self._seq.get(uri) == arrival.seq

    def since_ms(self, arrival: Arrival) -> float:
        return (self.clock() - arrival.t0) * 1000

    def forget(self, uri: str) -> None:
        self._seq.pop(uri, None)
        self._last_at.pop(uri, None)

    def _note_gap(self, uri: str, now: float) -> float | None:
        last = self._last_at.get(uri)
        self._last_at[uri] = now
        return None if last is None else (now - last) * 1000


def debounce_s(
    gap_ms: float | None, configured_ms: int, model_ms: float | None, cheap_cancel: bool = False
) -> float:
    """Configured, or adaptive: wait only while the user types faster than the model answers, and
    only where superseding a started generation costs something.

    `cheap_cancel`: the backend stops a superseded generation within one step and keeps what it
    computed (the local engine: the next keystroke's request reuses its KV). Starting at once then
    costs the next request one step at most, while any wait adds itself to the suggestion at the
    pause that ends the burst: no wait (`make demo`: pause -> suggestion p50 225 -> 159-186 ms).

    Otherwise, a request that comes after a pause longer than a model call (`model_ms`, its
    moving average) goes at once. While requests come faster than that, wait half the gap before
    this one (at most half a model call, and 100 ms), so a burst of keystrokes starts one
    generation instead of many.
    """
    if configured_ms > 0:
        return configured_ms / 1000
    if cheap_cancel or gap_ms is None or model_ms is None or gap_ms >= model_ms:
        return 0.0
    return min(0.5 * gap_ms, 0.5 * model_ms, MAX_ADAPTIVE_DEBOUNCE_MS) / 1000
