"""The engine's own speculative-decoding counters, read from its Prometheus `/metrics` page.

vLLM (`vllm:spec_decode_num_draft_tokens_total`, `..._num_accepted_tokens_total`,
`..._num_drafts_total`) and llama-server started with `--metrics` (the same names under
`llamacpp:`) count drafted and accepted tokens for the whole engine since it started: every user's
requests, not only this editor's. vLLM's stream does not carry them per request, so this is the
only place they are seen. `fetch_metrics` reads the page within a cap (`body.py`), and
`MetricsPoller` reads it off the keystroke path: a generation's end pokes it, and a thread of its
own polls at most once every `interval_s`. A missing or disabled endpoint (404, llama-server's 501
without `--metrics`) leaves the figures absent; a failed poll (a page past its cap too) keeps the
last ones.

The page is Prometheus' text format; only lines `name{labels} value` are read (series of one name
with different labels, e.g. vLLM's per-engine ones, are summed), which is all these counters need.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import httpx

from spec_lsp.remote import body
from spec_lsp.remote.spec import InsecureKeyError, RemoteSpec
from spec_lsp.remote.sse import RemoteError

log = logging.getLogger(__name__)

COUNTERS = {  # wire name -> the counter's name after its "vllm:" or "llamacpp:" namespace
    "draftTokens": "spec_decode_num_draft_tokens_total",
    "acceptedTokens": "spec_decode_num_accepted_tokens_total",
    "drafts": "spec_decode_num_drafts_total",
}
NAMESPACES = ("vllm", "llamacpp")
IDLE_EXIT_S = 60.0  # the polling thread ends after this long without a poke (the next starts one)
MAX_PAGE_BYTES = 1 << 20  # a /metrics page is a few KiB (vLLM's, with its histograms, tens)


def fetch_metrics(spec: RemoteSpec) -> httpx.Response:
    """One read of the engine's `/metrics` page, within MAX_PAGE_BYTES and the spec's
    `max_stream_s` (`body.py`: the engine may send an endless page, a byte at a time)."""
    try:
        headers = spec.headers()
    except InsecureKeyError as exc:  # generation's health says why; the poller stays quiet
        raise httpx.RequestError(str(exc)) from exc
    url, options = f"{spec.base_url}/metrics", spec.client_options()
    with httpx.stream(
        "GET", url, headers=headers, timeout=spec.connect_timeout_s, **options
    ) as got:
        cap = body.Cap(MAX_PAGE_BYTES, spec.max_stream_s, "the /metrics page's cap")
        page = body.read(got, cap) if got.status_code == 200 else b""
    return httpx.Response(got.status_code, content=page)


def parse_prometheus(text: str) -> dict[str, float]:
    """Sample values by metric name (labels dropped, their series summed); comments skipped."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name_end = line.find("{")
        if name_end < 0:
            name, _, rest = line.partition(" ")
        else:
            name, rest = line[:name_end], line[line.rfind("}") + 1 :]
        fields = rest.split()
        if not fields:
            continue
        try:
            value = float(fields[0])
        except ValueError:
            continue
        values[name] = values.get(name, 0.0) + value
    return values


def spec_figures(values: dict[str, float]) -> dict[str, object] | None:
    """The speculative counters for `spec-lsp/stats` (None when the engine exposes none)."""
    for namespace in NAMESPACES:
        found = {key: values.get(f"{namespace}:{name}") for key, name in COUNTERS.items()}
        if found["draftTokens"] is None:
            continue
        drafted = int(found["draftTokens"] or 0)
        accepted = int(found["acceptedTokens"] or 0)
        return {
            "source": namespace,
            "draftTokens": drafted,
            "acceptedTokens": accepted,
            "drafts": None if found["drafts"] is None else int(found["drafts"]),
            "acceptance": accepted / drafted if drafted else None,
        }
    return None


class MetricsPoller:
    """Polls `/metrics` in its own thread when poked, at most once every `interval_s`."""

    def __init__(
        self,
        fetch: Callable[[], httpx.Response],
        interval_s: float = 5.0,
    ) -> None:
        self._fetch = fetch
        self.interval_s = interval_s
        self._due = threading.Event()
        self._stopped = threading.Event()
        self._lock = threading.Lock()  # the thread's start and idle exit
        self._thread: threading.Thread | None = None
        self.figures: dict[str, object] | None = None  # replaced whole: safe to read anywhere
        self.polls = 0

    def poke(self) -> None:
        """Asks for a poll (cheap: sets an event); the first poke starts the thread."""
        if self.interval_s <= 0 or self._stopped.is_set():
            return
        with self._lock:
            self._due.set()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="spec-lsp-remote-metrics", daemon=True
                )
                self._thread.start()

    def poll(self) -> None:
        """One read of the page; the figures become None when the endpoint is missing."""
        self.polls += 1
        try:
            response = self._fetch()
        except (httpx.HTTPError, RemoteError):
            # unreachable, or a page past its cap: generation's health says so; keep the last
            return
        if response.status_code != 200:
            self.figures = None
            return
        self.figures = spec_figures(parse_prometheus(response.text))

    def stop(self) -> None:
        self._stopped.set()
        self._due.set()

    def join(self, timeout: float | None = None) -> bool:
        """Waits for the polling thread to end (after `stop()`, once a poll in flight returns);
        True when none runs. What the thread would have polled is then all counted."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()

    def _run(self) -> None:
        while not self._stopped.is_set():
            if not self._due.wait(IDLE_EXIT_S):
                with self._lock:  # idle (or an old backend nobody uses): end, unless poked
                    if not self._due.is_set():
                        self._thread = None
                        return
                continue
            if self._stopped.is_set():
                return
            self._due.clear()
            try:
                self.poll()
            except Exception:  # a bug here must not end the polling for good
                log.exception("reading the engine's /metrics failed")
            self._stopped.wait(self.interval_s)  # at most one poll per interval
