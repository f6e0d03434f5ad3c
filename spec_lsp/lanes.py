"""The inference worker's queue: one lane per client, the lane of the newest keystroke first.

A shared server's clients (editor windows) send their work to one worker thread, which runs one
job at a time. Each client has a lane of its own, first in, first out: its jobs run in the order
it submitted them, exactly as with one client (a stdio server has one lane: a plain FIFO queue).
Between lanes, the worker takes the next job from the lane whose client touched it last
(`touch`: an edit, a completion request arriving): the window the user types in now is served
first, and a window that went quiet waits behind it, whenever its jobs were queued.

Nothing here cancels a job. A client's stale work is superseded and cancelled by that client's own
edits (`completion/live.py`, per document of that client); another client's keystrokes only move
ahead of it in this order. A job already running is not interrupted for another lane, except idle
work no one waits for (a warm-up), which the worker stops within a pass (`InferenceWorker.touch`):
the newest keystroke waits for a running completion's generation, never for another window's
warm-up.

It knows nothing of what a job is, of clients or of LSP; the clock is injected, so the order is a
pure function of the calls (tests/test_lanes.py).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class Lanes(Generic[T]):
    """A blocking queue of items in lanes; `get` takes the oldest item of the freshest lane."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._lanes: dict[Hashable, deque[T]] = {}  # only lanes that hold items
        self._fresh: dict[Hashable, float] = {}  # when each lane's client last touched it
        self._closed = False

    def touch(self, lane: Hashable) -> None:
        """The lane's client did something the user waits on (an edit, a request): its lane
        goes ahead of every lane touched before."""
        with self._cond:
            self._fresh[lane] = self._clock()

    def put(self, lane: Hashable, item: T) -> bool:
        """Queues `item` at the end of `lane`; False once closed (the caller answers it)."""
        with self._cond:
            if self._closed:
                return False
            self._fresh.setdefault(lane, self._clock())  # never touched: as fresh as its first job
            self._lanes.setdefault(lane, deque()).append(item)
            self._cond.notify()
            return True

    def get(self) -> T | None:
        """Blocks until an item is queued; the oldest of the freshest lane. None once closed."""
        with self._cond:
            while not self._lanes and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            return self._take(self._freshest())

    def forget(self, lane: Hashable) -> None:
        """The lane's client has gone: its freshness is dropped (the items it still holds stay
        queued, and run as an untouched lane's would)."""
        with self._cond:
            self._fresh.pop(lane, None)
            if lane in self._lanes:
                self._fresh[lane] = float("-inf")

    def empty(self) -> bool:
        with self._cond:
            return not self._lanes

    def close(self) -> None:
        """Closes the queue: `get` returns None from now on, `put` refuses; what is queued stays
        for `drain`."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def drain(self) -> list[T]:
        """Takes every item still queued, oldest lane first (to be answered without running)."""
        with self._cond:
            left = [item for items in self._lanes.values() for item in items]
            self._lanes.clear()
            return left

    def _freshest(self) -> Hashable:
        # max keeps the first of equals: lanes touched at the same instant go in queueing order.
        return max(self._lanes, key=lambda lane: self._fresh.get(lane, float("-inf")))

    def _take(self, lane: Hashable) -> T:
        items = self._lanes[lane]
        item = items.popleft()
        if not items:
            del self._lanes[lane]
        return item
