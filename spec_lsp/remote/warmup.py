"""Prompt-only warm-ups: a superseded request's prompt keeps being evaluated on the engine.

A keystroke closes the running stream, and llama-server then stops the prompt evaluation at the
next batch boundary (it keeps the batches it finished, but sits idle until the next request,
which comes only after spec-lsp's debounce, and is itself closed by the keystroke after). So a
cold file's prompt rarely finishes while the user types. When a streamed request is closed
before its first token arrived (its prompt was still being evaluated), the backend hands its
request body here, and a thread of its own sends it again as a non-streamed, prompt-only request
(`n_predict` 0, `cache_prompt`, the same `id_slot`): llama-server evaluates the whole prompt into
the slot's cache (and samples one token it throws away), and no keystroke cancels it. The next
real request, queued by the server behind it on the same slot, evaluates only its new tail.

At most one warm-up is in flight (one thread, one connection); each document has at most one
waiting, and a newer prompt replaces a waiting one, so they never pile up. The editor side never
waits for a warm-up: the worker thread only hands a body over. While the engine backs off after
a failure, waiting warm-ups are dropped; a failed warm-up is a failure like any other (the
status says why, the back-off starts). `spec-lsp/stats` counts them (`remoteWarmups`).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

Send = Callable[[str, dict[str, Any]], dict[str, Any]]  # (path, body) -> the engine's JSON answer
IDLE_EXIT_S = (
    60.0  # the thread ends after this long with nothing to send (the next offer starts one)
)


class Warmer:
    def __init__(
        self,
        send: Send,
        failed: Callable[[Exception], None],
        backing_off: Callable[[], bool] = lambda: False,
    ) -> None:
        self._send = send
        self._failed = failed  # marks the engine failing, with the reason in words
        self._backing_off = backing_off
        self._cond = threading.Condition()
        self._waiting: OrderedDict[str, tuple[str, dict[str, Any]]] = OrderedDict()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self.in_flight: str | None = None  # the document whose warm-up is being sent
        self.done = 0
        self.failed = 0
        self.replaced = 0  # waiting warm-ups replaced by a newer prompt of the same document
        self.dropped = 0  # waiting warm-ups dropped (engine backing off, document closed)
        self.evaluated = 0  # prompt tokens the engine evaluated for warm-ups (`prompt_n`)

    def offer(self, doc_id: str, path: str, body: dict[str, Any]) -> None:
        """Queues a prompt-only request for `doc_id`, replacing the one waiting; returns at once."""
        with self._cond:
            if self._stopped:
                return
            if self._waiting.pop(doc_id, None) is not None:
                self.replaced += 1
            self._waiting[doc_id] = (path, body)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="spec-lsp-remote-warmup", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def forget(self, doc_id: str) -> None:
        with self._cond:
            if self._waiting.pop(doc_id, None) is not None:
                self.dropped += 1

    def waiting(self) -> int:
        with self._cond:
            return len(self._waiting)

    def idle(self) -> bool:
        """Nothing waiting and nothing in flight."""
        with self._cond:
            return not self._waiting and self.in_flight is None

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._waiting.clear()
            self._cond.notify_all()

    def stats(self) -> dict[str, int]:
        """For `spec-lsp/stats` (`remoteWarmups`)."""
        with self._cond:
            return {
                "done": self.done,
                "failed": self.failed,
                "replaced": self.replaced,
                "dropped": self.dropped,
                "waiting": len(self._waiting),
                "inFlight": int(self.in_flight is not None),
                "evaluatedTokens": self.evaluated,
            }

    def _next(self) -> tuple[str, str, dict[str, Any]] | None:
        with self._cond:
            while not self._waiting and not self._stopped:
                if not self._cond.wait(IDLE_EXIT_S) and not self._waiting:
                    self._thread = None  # idle: end (the next offer starts a thread)
                    return None
            if self._stopped:
                return None
            doc_id, (path, body) = self._waiting.popitem(last=False)
            self.in_flight = doc_id
            return doc_id, path, body

    def _run(self) -> None:
        while (item := self._next()) is not None:
            _, path, body = item
            try:
                if self._backing_off():
                    with self._cond:
                        self.dropped += 1
                    continue
                answer = self._send(path, body)
                timings = answer.get("timings") if isinstance(answer, dict) else None
                evaluated = int(timings.get("prompt_n", 0)) if isinstance(timings, dict) else 0
                with self._cond:
                    self.done += 1
                    self.evaluated += max(0, evaluated)
            except Exception as exc:  # any failure is counted and reported, never raised
                with self._cond:
                    if self._stopped:  # the backend closed under it: not the engine's failure
                        return
                    self.failed += 1
                try:
                    self._failed(exc)
                except Exception:
                    log.exception("reporting a failed warm-up failed")
            finally:
                with self._cond:
                    self.in_flight = None
                    self._cond.notify_all()
