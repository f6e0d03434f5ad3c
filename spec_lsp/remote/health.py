"""Whether the remote engine answers, why not in words, and from when to try again (backing off).

A failed request (server down, slow, 5xx, a malformed chunk, a connection reset) marks the engine
unavailable for a delay that doubles with each failure in a row (0.5 s up to 30 s); requests in
that window are answered empty at once, without a connection attempt. The first request after it
tries again, and a success clears the state: the server recovers by itself when the engine does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

FIRST_DELAY_S = 0.5
MAX_DELAY_S = 30.0


class Health:
    def __init__(
        self,
        where: str,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.where = where  # e.g. "llama-server at http://127.0.0.1:8080" (never a key)
        self._clock = clock
        self._wall = wall  # the time of day, to name the retry's clock time
        self._lock = threading.Lock()
        self.error: str | None = None
        self.failures = 0
        self.retry_at = 0.0
        self.retry_clock = ""  # the retry's local time of day, HH:MM:SS
        self.last_ok: float | None = None

    def failed(self, why: str) -> None:
        with self._lock:
            self.failures += 1
            delay = min(MAX_DELAY_S, FIRST_DELAY_S * 2 ** (self.failures - 1))
            self.retry_at = self._clock() + delay
            self.retry_clock = time.strftime("%H:%M:%S", time.localtime(self._wall() + delay))
            self.error = why

    def ok(self) -> None:
        with self._lock:
            self.error, self.failures, self.retry_at = None, 0, 0.0
            self.last_ok = self._clock()

    def backing_off(self) -> bool:
        """True while a failure's delay runs: answer empty without trying."""
        return self.error is not None and self._clock() < self.retry_at

    def status(self) -> dict[str, object]:
        """For `spec-lsp/status`: the engine's state and, when it fails, why in words. The retry
        is named by its clock time, not a countdown, so an open tooltip stays true as time runs
        (the first request at or after that time tries again)."""
        if self.error is None:
            return {"remote": self.where, "available": True, "message": None}
        message = f"{self.where}: {self.error}; retrying at the first request after "
        message += self.retry_clock
        return {"remote": self.where, "available": False, "message": message}
