"""The streaming loop every remote backend shares: one HTTP request per generation, read as
server-sent events, closed as soon as the stop callback, a stop string or the cancel token fires.

The request runs on httpx's async client in an event loop this backend owns, driven from the
inference worker's thread (`Backend.generate` is blocking there). A watcher polls the request's
`CancelToken` every POLL_S and cancels the streaming task, which closes the connection at once,
even while the server has not sent the next chunk (a long prefill). A failure (connection refused
or reset, timeout, HTTP error, malformed chunk, a stream past its preset's `max_stream_bytes` or
`max_stream_s`, an API key refused on plain HTTP) is an empty result with stop_reason "error", and
`Health` says why and when to try again. Every body is read within its caps (`body.py`: the
stream, an error's start, a warm-up's answer), and `sse` splits the stream's lines. Every client
takes `RemoteSpec.client_options` (a loopback engine is never reached through a proxy). Subclasses
say where to send a request and how to read one chunk (`Chunk`), and may give the prompt-only
form of a request (`warmup_body`): a request closed before its first token is then handed to
`warmup.Warmer`, which sends it again in a thread of its own so the engine's prompt cache keeps
up with typing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import httpx

from spec_lsp.engine.api import (
    BackendBase,
    GenerationRequest,
    GenerationResult,
    GenerationStats,
    StopReason,
)
from spec_lsp.remote import body as body_of
from spec_lsp.remote import sse
from spec_lsp.remote.health import Health
from spec_lsp.remote.metrics import MetricsPoller, fetch_metrics
from spec_lsp.remote.spec import InsecureKeyError, RemoteSpec
from spec_lsp.remote.sse import RemoteError
from spec_lsp.remote.warmup import Warmer

log = logging.getLogger(__name__)

POLL_S = 0.005  # how often the cancel token is looked at while a chunk is awaited
CHARS_PER_TOKEN = 4.0  # count_tokens' estimate when the server cannot tokenize
WARMUP_READ_S = 120.0  # a warm-up answers only once its whole prompt is evaluated


@dataclass
class Chunk:
    text: str = ""
    done: bool = False
    stop_reason: StopReason = ""  # when done: max_tokens | eos | stop_string
    stats: dict[str, Any] = field(default_factory=dict)  # engine figures, read by `fill_stats`


@dataclass
class _Progress:
    text: str = ""
    chunks: int = 0
    stop_reason: StopReason = ""
    stats: dict[str, Any] = field(default_factory=dict)
    sent: tuple[str, dict[str, Any]] | None = None  # (path, body) once the request was sent


class RemoteBackend(BackendBase):
    """A `spec_lsp.engine.api.Backend` that streams from an HTTP engine."""

    label = "remote"

    def __init__(self, spec: RemoteSpec, clock: Callable[[], float] = time.monotonic) -> None:
        self.spec = spec
        # `clock`: when a failure's back-off ends (`Health`); a test passes its own to step it.
        self.health = Health(f"{self.label} at {spec.base_url}", clock=clock)
        self.device = "remote"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: httpx.AsyncClient | None = None
        self.requests = 0
        self.metrics = MetricsPoller(lambda: fetch_metrics(spec), spec.metrics_interval_s)
        self._warm_client: httpx.Client | None = None  # used by the warm-up thread only
        self.warmer: Warmer | None = None
        if spec.warmup and type(self).warmup_body is not RemoteBackend.warmup_body:
            self.warmer = Warmer(self.send_warmup, self._warmup_failed, self.health.backing_off)

    # -- what subclasses say ------------------------------------------------------------------
    def endpoint(self, request: GenerationRequest) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def read_chunk(self, data: dict[str, Any]) -> Chunk:
        raise NotImplementedError

    def fill_stats(self, stats: GenerationStats, figures: dict[str, Any]) -> None:
        """Copies the engine's own figures (prompt cached/evaluated, drafted/accepted)."""

    def warmup_body(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The prompt-only form of a sent request's body (`warmup.py`); a backend that does not
        override it sends no warm-ups."""
        raise NotImplementedError

    # -- Backend ------------------------------------------------------------------------------
    def generate(self, request: GenerationRequest) -> GenerationResult:
        start = time.perf_counter()
        stats = GenerationStats(method=self.label)
        progress = _Progress()
        if self.health.backing_off():
            stats.stop_reason = "error"
        else:
            loop = self._event_loop()
            try:
                loop.run_until_complete(self._run(request, progress))
                self.health.ok()
                stats.stop_reason = progress.stop_reason or "eos"
            except RemoteError as exc:
                self._failed(str(exc), stats)
            except httpx.HTTPError as exc:
                self._failed(_describe(exc, self.spec), stats)
            if progress.stop_reason == "cancelled" and not progress.chunks:
                self._warm_up(request, progress)
        text = "" if stats.failed else progress.text
        stats.generated_tokens = progress.chunks
        self.fill_stats(stats, progress.stats)
        stats.total_ms = (time.perf_counter() - start) * 1000
        if stats.total_ms > 0 and stats.generated_tokens:
            stats.tokens_per_s = stats.generated_tokens / (stats.total_ms / 1000)
        self.metrics.poke()  # after the answer: the engine's counters, read in another thread
        return GenerationResult(text, stats=stats)

    def count_tokens(self, text: str) -> int:
        return max(1, round(len(text) / CHARS_PER_TOKEN)) if text else 0

    def forget(self, doc_id: str) -> None:
        """The engine keeps its own prompt cache; only a waiting warm-up is dropped here."""
        if self.warmer is not None:
            self.warmer.forget(doc_id)

    def status(self) -> dict[str, object]:
        return self.health.status()

    def engine_stats(self) -> dict[str, object] | None:
        """The engine's drafted/accepted counters from `/metrics` (None until read, or when the
        engine exposes none); for `spec-lsp/stats`."""
        return self.metrics.figures

    def warmup_stats(self) -> dict[str, int] | None:
        """Prompt-only warm-ups sent for superseded requests (None when this backend sends
        none); for `spec-lsp/stats`."""
        return None if self.warmer is None else self.warmer.stats()

    def close(self) -> None:
        self.metrics.stop()
        if self.warmer is not None:
            self.warmer.stop()
        if self._warm_client is not None:
            self._warm_client.close()  # a warm-up in flight ends with it
        if self._loop is not None:
            if self._client is not None:
                self._loop.run_until_complete(self._client.aclose())
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()
        self._loop = self._client = None

    # -- the loop -----------------------------------------------------------------------------
    def _failed(self, why: str, stats: GenerationStats) -> None:
        log.warning("%s: %s", self.health.where, why)
        self.health.failed(why)
        stats.stop_reason = "error"

    def _warm_up(self, request: GenerationRequest, progress: _Progress) -> None:
        """A request closed before its first token: its prompt was still being evaluated, so the
        same prompt goes again as a prompt-only request that no keystroke cancels."""
        if self.warmer is not None and progress.sent is not None:
            path, body = progress.sent
            self.warmer.offer(request.doc_id or "", path, self.warmup_body(path, body))

    def send_warmup(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """One prompt-only request, blocking (in the warm-up thread): the engine's JSON answer."""
        if self._warm_client is None:
            s = self.spec
            timeout = httpx.Timeout(
                max(WARMUP_READ_S, s.read_timeout_s), connect=s.connect_timeout_s
            )
            self._warm_client = httpx.Client(
                base_url=s.base_url, timeout=timeout, **s.client_options()
            )
        with self._warm_client.stream("POST", path, json=body, headers=self.headers()) as answer:
            if answer.status_code >= 400:
                why = body_of.detail(answer)
                raise RemoteError(f"HTTP {answer.status_code} from {path} (warm-up): {why}")
            data = body_of.read(answer, self.answer_cap())
        try:
            parsed = json.loads(data)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise RemoteError(f"malformed answer from {path} (warm-up)")
        return parsed

    def _warmup_failed(self, exc: Exception) -> None:
        if isinstance(exc, httpx.HTTPError):
            why = _describe(exc, self.spec, WARMUP_READ_S) + " (warm-up)"
        elif isinstance(exc, RemoteError):
            why = str(exc)
        else:
            why = f"warm-up failed: {type(exc).__name__}"
        log.warning("%s: %s", self.health.where, why)
        self.health.failed(why)

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop

    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            s = self.spec
            self._client = httpx.AsyncClient(
                base_url=s.base_url,
                timeout=httpx.Timeout(s.read_timeout_s, connect=s.connect_timeout_s),
                **s.client_options(),
            )
        return self._client

    def answer_cap(self) -> body_of.Cap:
        """How much of one answer is read: the preset's `max_stream_bytes` and `max_stream_s`."""
        return body_of.Cap(self.spec.max_stream_bytes, self.spec.max_stream_s)

    def headers(self) -> dict[str, str]:
        """The spec's request headers; a key refused on plain HTTP is a `RemoteError`."""
        try:
            return self.spec.headers()
        except InsecureKeyError as exc:
            raise RemoteError(str(exc)) from exc

    async def _run(self, request: GenerationRequest, progress: _Progress) -> None:
        """Streams until done or stopped; a set cancel token cancels the stream at once, and a
        stream still running after `max_stream_s` is closed as an error."""
        stream = asyncio.ensure_future(self._stream(request, progress))
        watch = asyncio.ensure_future(_cancelled(request))
        limit_s = self.spec.max_stream_s
        try:
            done, _ = await asyncio.wait(
                {stream, watch}, timeout=limit_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for task in (stream, watch):
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
        if not done:
            raise RemoteError(
                f"the answer was still streaming after {limit_s:g} s (max_stream_s): closed"
            )
        if stream.cancelled():
            progress.stop_reason = "cancelled"
        else:
            stream.result()  # raises what the stream raised

    async def _stream(self, request: GenerationRequest, progress: _Progress) -> None:
        path, body = self.endpoint(request)
        headers = self.headers()  # before anything is sent
        progress.sent = (path, body)
        self.requests += 1
        client = self.client()
        async with client.stream("POST", path, json=body, headers=headers) as response:
            if response.status_code >= 400:
                detail = await body_of.adetail(response)
                raise RemoteError(f"HTTP {response.status_code} from {path}: {detail}")
            # Async generators: closed on return, not when collected.
            chunks = cast(AsyncGenerator[bytes, None], body_of.achunks(response, self.answer_cap()))
            lines = cast(AsyncGenerator[str, None], sse.lines(chunks))
            async with contextlib.aclosing(chunks), contextlib.aclosing(lines):
                async for line in lines:
                    chunk = self._parse(line)
                    if chunk is None:
                        continue
                    progress.stats.update(chunk.stats)
                    progress.stop_reason = chunk.stop_reason or progress.stop_reason
                    if chunk.text:
                        progress.chunks += 1
                        if progress.chunks == 1:  # the engine answers: the status says so
                            self.health.ok()  # now, not when the stream ends (an early answer)
                        if _append(request, progress, chunk.text):
                            return  # leaving the block closes the response and its connection
                    if chunk.done:
                        progress.stop_reason = progress.stop_reason or "eos"
                        return
        raise RemoteError("the stream ended before its last chunk")

    def _parse(self, line: str) -> Chunk | None:
        """One server-sent event line: a chunk, None for other lines, RemoteError if bad."""
        data = sse.payload(line)
        if data is None or data == sse.DONE:
            return None if data is None else Chunk(done=True)
        assert isinstance(data, dict)
        try:
            return self.read_chunk(data)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise RemoteError(f"malformed chunk ({type(exc).__name__})") from exc


async def _cancelled(request: GenerationRequest) -> None:
    while request.cancel is None or not request.cancel.cancelled:
        await asyncio.sleep(POLL_S)


def _append(request: GenerationRequest, progress: _Progress, piece: str) -> bool:
    """Adds a streamed piece; True (text cut to what is kept) when a stop fires."""
    before = len(progress.text)
    text = progress.text + piece
    keep: int | None = None
    for stop in request.stop_strings:
        at = text.find(stop, max(0, before - len(stop) + 1))
        if at >= 0 and (keep is None or at < keep):
            keep, progress.stop_reason = at, "stop_string"
    if keep is None and request.stop_callback is not None:
        keep = request.stop_callback(text)
        if keep is not None:
            progress.stop_reason = "callback"
    progress.text = text if keep is None else text[:keep]
    if request.on_text is not None and len(progress.text) > before:
        request.on_text(progress.text[before:])
    return keep is not None


def _describe(exc: httpx.HTTPError, spec: RemoteSpec, read_s: float = 0.0) -> str:
    """An httpx failure in words, for the status (`read_s`: a longer read timeout than the
    spec's was used)."""
    if isinstance(exc, httpx.ConnectError):
        return "connection refused or unreachable (is the engine running?)"
    if isinstance(exc, httpx.ConnectTimeout):
        return f"no connection within {spec.connect_timeout_s:g} s"
    if isinstance(exc, httpx.ReadTimeout):
        return f"no answer within {max(read_s, spec.read_timeout_s):g} s (engine slow or stuck)"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "connection closed mid-answer"
    if isinstance(exc, httpx.ReadError):
        return "connection reset mid-answer"
    return f"{type(exc).__name__}: {exc}"[:200]
