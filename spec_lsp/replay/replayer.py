"""`spec-lsp replay`: sends recorded sessions to a real server at their original times.

The replayer owns the connection: it starts the server, does initialize/shutdown with its own
client capabilities (those of a plain VS Code-like editor), waits for the model to be ready, then
sends every message of every session on schedule (scaled by `speed`), renumbering request ids
and keeping its own copy of each document so it can tell, for every answer, what the document
was when it was asked and when it arrived. Figures come from `analysis`; this module only
observes.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from spec_lsp.interpreter import child_command
from spec_lsp.replay import accepts
from spec_lsp.replay.client import LspClient, ServerError
from spec_lsp.replay.document import ReplayDocument, position_of
from spec_lsp.replay.format import Session
from spec_lsp.replay.handshake import client_capabilities as client_capabilities
from spec_lsp.replay.handshake import initialize as _initialize
from spec_lsp.replay.handshake import wait_ready as _wait_ready
from spec_lsp.replay.next_edit import NextEditAsker
from spec_lsp.replay.trace import Change, RequestRecord, Run, SessionTrace

TRACKED = frozenset({"textDocument/inlineCompletion", "textDocument/completion"})
PLAIN_OPTIONS = {"speculation": "off", "kvReuse": False}


@dataclass
class ReplayConfig:
    server_cmd: list[str]
    init_options: dict[str, Any] = field(default_factory=dict)
    speed: float = 1.0
    load_timeout_s: float = 600.0
    drain_timeout_s: float = 30.0  # after a session, how long to wait for outstanding answers
    label: str = "spec"
    server_log: IO[bytes] | None = None
    progress: Callable[[str], None] | None = None  # one line per session replayed
    accepts: bool = True  # a session without accept notifications: accept what is typed as shown
    next_edit_ms: float = 0.0  # ask for a next edit after this long without an edit (0: never)
    root: str | None = None  # a workspace folder the client opens (None: none)


def default_server_cmd(preset: str | None) -> list[str]:
    cmd = child_command("-m", "spec_lsp.cli", "serve")  # not the working directory's spec_lsp/
    return cmd + ["--preset", preset] if preset else cmd


class SessionPlayer:
    """Replays one session over a started client, filling in a SessionTrace."""

    def __init__(
        self,
        client: LspClient,
        session: Session,
        speed: float,
        accept: bool = True,
        next_edit_ms: float = 0.0,
    ) -> None:
        self.client = client
        self.session = session
        self.speed = speed
        recorded = any(e.method in accepts.ACCEPT_NOTIFICATIONS for e in session.events)
        self.synthesize_accepts = accept and not recorded
        self._accepted_at: float | None = None  # a recorded accept, for the next request
        self._skip_to = 0  # events before it were typed by a synthesized accept
        self.docs: dict[str, ReplayDocument] = {}
        self.by_session_id: dict[Any, RequestRecord] = {}
        self.trace = SessionTrace(name=session.name, encoding=session.header.position_encoding)
        self.cancels_skipped = 0
        self._gaps = _change_gaps(session, speed)
        self._t0 = 0.0
        clock = lambda: asyncio.get_running_loop().time() - self._t0  # noqa: E731
        ask = NextEditAsker(client, self.docs, next_edit_ms / 1000 / speed, clock)
        self.next_edits = ask if next_edit_ms > 0 else None

    async def play(self, drain_timeout_s: float) -> SessionTrace:
        loop = asyncio.get_running_loop()
        self._t0 = loop.time()
        for index, event in enumerate(self.session.events):
            if index < self._skip_to:
                continue
            due = self._t0 + event.t / 1000.0 / self.speed
            if (delay := due - loop.time()) > 0:
                await asyncio.sleep(delay)
            now = loop.time() - self._t0
            late_ms = (now - event.t / 1000.0 / self.speed) * 1000.0
            self.trace.late_ms_max = max(self.trace.late_ms_max, late_ms)
            if not (self.synthesize_accepts and self._accept(index, now)):
                self._send(event.msg, now, self._gaps.get(index))
            await self.client.drain()
        self.trace.end = loop.time() - self._t0
        if self.next_edits is not None:
            self.next_edits.stop()
            self.trace.next_edits = self.next_edits.records
        await self._wait_outstanding(drain_timeout_s)
        for uri in list(self.docs):  # leave the server as we found it
            self.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        await self.client.drain()
        return self.trace

    def _send(self, msg: dict[str, Any], now: float, gap_ms: float | None) -> None:
        method = msg.get("method")
        params = msg.get("params") or {}
        if method == "textDocument/didOpen":
            doc = params["textDocument"]
            self.docs[doc["uri"]] = ReplayDocument(
                doc["uri"],
                doc.get("languageId", ""),
                doc.get("version", 0),
                doc["text"],
                self.trace.encoding,
            )
            self.trace.changes.append(Change(doc["uri"], now, doc.get("version", 0), doc["text"]))
        elif method == "textDocument/didChange":
            uri = params["textDocument"]["uri"]
            if (document := self.docs.get(uri)) is not None:
                version = params["textDocument"].get("version", document.version + 1)
                edits = document.apply(params["contentChanges"], version)
                self.trace.changes.append(Change(uri, now, version, document.text, edits, gap_ms))
                if self.next_edits is not None:
                    self.next_edits.edited(uri)
        elif method == "textDocument/didClose":
            self.docs.pop(params["textDocument"]["uri"], None)
        elif method == "$/cancelRequest":
            self._cancel(params.get("id"), now)
            return
        elif method in accepts.ACCEPT_NOTIFICATIONS:
            self._accepted_at = now
            msg = self._accept_notification(params.get("textDocument", {}).get("uri"), msg)
        if "id" in msg and method is not None:
            self._request(msg, now)
        else:
            self.client.send(msg)

    def _request(self, msg: dict[str, Any], now: float) -> None:
        wire = dict(msg, id=self.client.next_id())
        params = msg.get("params") or {}
        uri = params.get("textDocument", {}).get("uri", "")
        document = self.docs.get(uri)
        if msg["method"] not in TRACKED or document is None or "position" not in params:
            self.client.send(wire, lambda _m, _t: None)
            return
        record = RequestRecord(
            id=wire["id"],
            session_id=msg["id"],
            method=msg["method"],
            uri=uri,
            sent=now,
            version=document.version,
            text=document.text,
            cursor=document.offset(params["position"]),
        )
        record.accepted_at, self._accepted_at = self._accepted_at, None
        if self.next_edits is not None:
            self.next_edits.cursor(uri, params["position"])
        self.by_session_id[msg["id"]] = record
        self.trace.requests.append(record)

        def on_response(response: dict[str, Any], arrived: float) -> None:
            record.arrived = arrived - self._t0
            live = self.docs.get(uri)
            record.arrived_version = live.version if live is not None else None
            record.result = response.get("result")
            record.error = response.get("error")

        self.client.send(wire, on_response)

    def _accept(self, index: int, now: float) -> bool:
        """At a keystroke: when it and the next ones type exactly what the shown suggestion
        still proposes, accepts it instead (one change, the accept notification, the next
        request at once) and skips those keystrokes (`accepts`); False when they do not."""
        msg = self.session.events[index].msg
        if msg.get("method") != "textDocument/didChange":
            return False
        uri = msg["params"]["textDocument"]["uri"]
        doc = self.docs.get(uri)
        found = None if doc is None else accepts.shown(self.trace, uri, doc.text)
        if doc is None or found is None:
            return False
        record, rest, cursor = found
        last = accepts.plan(self.session, index, doc, rest, cursor)
        if last is None:
            return False
        self._skip_to = accepts.skip_until(self.session, last)
        events = self.session.events
        next_t = events[self._skip_to].t if self._skip_to < len(events) else None
        gap = ((next_t or self.session.duration_ms) - events[index].t) / self.speed
        version = events[last].msg["params"]["textDocument"].get("version", doc.version + 1)
        pos = position_of(doc.text, cursor, self.trace.encoding)  # type: ignore[arg-type]
        change = {"range": {"start": pos, "end": pos}, "text": rest}
        self._send(_notification("textDocument/didChange", uri, version, [change]), now, gap)
        if (sid := accepts.accepted_id(record)) is not None:
            self.client.notify("spec-lsp/didAcceptCompletion", {"id": sid})
        after = position_of(doc.text, cursor + len(rest), self.trace.encoding)  # type: ignore[arg-type]
        self._accepted_at = now
        self._request(_inline_request(f"accept-{index}", uri, after), now)
        return True

    def _accept_notification(self, uri: Any, msg: dict[str, Any]) -> dict[str, Any]:
        """A recorded accept, for the suggestion this replay shows (its own id)."""
        for doc_uri, doc in self.docs.items():
            if uri in (None, doc_uri) and (found := accepts.shown(self.trace, doc_uri, doc.text)):
                sid = accepts.accepted_id(found[0])
                if sid is not None:
                    return dict(msg, params={"id": sid})
        return msg

    def _cancel(self, session_id: Any, now: float) -> None:
        record = self.by_session_id.get(session_id)
        if record is None or record.arrived is not None:
            self.cancels_skipped += 1  # a client only cancels requests still pending
            return
        record.cancel_sent = now
        self.client.notify("$/cancelRequest", {"id": record.id})

    async def _wait_outstanding(self, timeout_s: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while any(r.arrived is None for r in self.trace.requests) and loop.time() < deadline:
            if self.client.closed.is_set():
                return
            await asyncio.sleep(0.05)


def _notification(method: str, uri: str, version: int, changes: list[Any]) -> dict[str, Any]:
    params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}
    return {"jsonrpc": "2.0", "method": method, "params": params}


def _inline_request(rid: str, uri: str, position: dict[str, int]) -> dict[str, Any]:
    params = {"textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": 2}}
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "textDocument/inlineCompletion",
        "params": params,
    }


def _change_gaps(session: Session, speed: float) -> dict[int, float]:
    """For each didChange's index: replayed ms until the next didChange, or the session's end."""
    indexes = [i for i, e in enumerate(session.events) if e.method == "textDocument/didChange"]
    gaps = {}
    for i, index in enumerate(indexes):
        next_t = session.events[indexes[i + 1]].t if i + 1 < len(indexes) else session.duration_ms
        gaps[index] = (next_t - session.events[index].t) / speed
    return gaps


def _progress_line(label: str, trace: SessionTrace) -> str:
    answered = sum(r.arrived is not None and r.error is None for r in trace.requests)
    line = (
        f"[{label}] {trace.name}: {trace.end:.1f} s, {len(trace.requests)} requests, "
        f"{answered} answered"
    )
    if trace.late_ms_max > 50:
        line += f" (sent up to {trace.late_ms_max:.0f} ms late: the machine is busy)"
    return line


async def replay_run(sessions: list[Session], config: ReplayConfig) -> Run:
    """Replays all sessions, in order, against one server (a new one per position encoding)."""
    run = Run(label=config.label, init_options=dict(config.init_options))
    client: LspClient | None = None
    encoding = None
    try:
        for session in sessions:
            if client is None or session.header.position_encoding != encoding:
                if client is not None:
                    await client.stop()
                encoding = session.header.position_encoding
                client = LspClient(config.server_cmd, config.server_log)
                await client.start()
                await _initialize(client, encoding, config.init_options, config.root)
                run.server_status = await _wait_ready(client, config.load_timeout_s)
            player = SessionPlayer(
                client, session, config.speed, config.accepts, config.next_edit_ms
            )
            trace = await player.play(config.drain_timeout_s)
            run.traces.append(trace)
            if config.progress is not None:
                config.progress(_progress_line(config.label, trace))
            if client.closed.is_set():
                raise ServerError(f"the server exited during session {session.name!r}")
        if client is not None:
            with contextlib.suppress(ServerError):
                run.server_stats = await client.request("spec-lsp/stats", {}, timeout=30.0)
    finally:
        if client is not None:
            run.messages = list(client.messages)
            await client.stop()
    return run


def replay(sessions: list[Session], config: ReplayConfig) -> Run:
    """Synchronous entry point; server stderr goes to a temporary log shown on failure."""
    if config.server_log is not None:
        return asyncio.run(replay_run(sessions, config))
    with tempfile.TemporaryFile() as log:
        config.server_log = log
        try:
            return asyncio.run(replay_run(sessions, config))
        except ServerError as exc:
            log.seek(0)
            tail = log.read().decode("utf-8", "replace")[-3000:]
            raise ServerError(f"{exc}\n--- server log (tail) ---\n{tail}") from None
        finally:
            config.server_log = None
