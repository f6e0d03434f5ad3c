"""Whether the remote engine answers, why not in words, and when to try again (backing off).

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
    def __init__(self, where: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.where = where  # e.g. "llama-server at http://127.0.0.1:8080" (never a key)
        self._clock = clock
        self._lock = threading.Lock()
        self.error: str | None = None
        self.failures = 0
        self.retry_at = 0.0
        self.last_ok: float | None = None

    def failed(self, why: str) -> None:
        with self._lock:
            self.failures += 1
            delay = min(MAX_DELAY_S, FIRST_DELAY_S * 2 ** (self.failures - 1))
            self.retry_at = self._clock() + delay
            self.error = why

    def ok(self) -> None:
        with self._lock:
            self.error, self.failures, self.retry_at = None, 0, 0.0
            self.last_ok = self._clock()

    def backing_off(self) -> bool:
        """True while a failure's delay runs: answer empty without trying."""
        return self.error is not None and self._clock() < self.retry_at

    def status(self) -> dict[str, object]:
        """For `spec-lsp/status`: the engine's state and, when it fails, why in words."""
        if self.error is None:
            return {"remote": self.where, "available": True, "message": None}
        wait = max(0.0, self.retry_at - self._clock())
        message = f"{self.where}: {self.error}"
        message += f"; retrying in {wait:.1f} s" if wait > 0 else "; retrying at the next request"
        return {"remote": self.where, "available": False, "message": message}
