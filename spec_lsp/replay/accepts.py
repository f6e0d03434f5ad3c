"""Accepts in a replay: when the user takes the suggestion shown instead of typing it.

A recorded session carries the editor's accept notifications; a synthesized one only has the
keystrokes. For those, the replayer treats the keystrokes that type exactly what the shown
suggestion still proposes as an accept at the first of them: it sends one change inserting the
rest of the suggestion (and the accept notification), asks for the next suggestion at once, as an
editor does after an accept, and skips the session's own messages for those keystrokes (their
time passes as the user's pause after the accept). The figures: how long from the accept until
the next suggestion (p50/p90), and how many of those came from the server's prefetch.

This module owns finding the shown suggestion, planning an accept over the session's upcoming
keystrokes, and the accept figures. It knows nothing of the connection (the replayer sends).
"""

from __future__ import annotations

import copy
from typing import Any

from spec_lsp.replay.analysis import ShownSuggestion, percentiles, suggestion_of
from spec_lsp.replay.document import ReplayDocument
from spec_lsp.replay.format import Session
from spec_lsp.replay.trace import RequestRecord, SessionTrace

ACCEPT_NOTIFICATIONS = frozenset({"spec-lsp/didAcceptCompletion"})
LOOKAHEAD = 600  # session events searched for the keystrokes that type a suggestion
TRACKED = frozenset({"textDocument/inlineCompletion", "textDocument/completion"})


def shown(trace: SessionTrace, uri: str, text: str) -> tuple[RequestRecord, str, int] | None:
    """The answer a simulated editor shows over document `text`, what is left of it and the
    cursor: the latest arrived answer, not cancelled by the client, that still fits with text
    left."""
    answered = [r for r in trace.requests if r.uri == uri and r.arrived is not None]
    for record in sorted(answered, key=lambda r: r.arrived or 0.0, reverse=True):
        if record.error is not None or record.result is None:
            continue
        if record.cancel_sent is not None and record.cancel_sent <= (record.arrived or 0.0):
            continue
        suggestion: ShownSuggestion | None = suggestion_of(record, trace.encoding)
        rest = None if suggestion is None else suggestion.remaining(text)
        if suggestion is not None and rest:
            return record, rest, len(text) - (len(suggestion.base) - suggestion.end)
    return None


def plan(
    session: Session, index: int, document: ReplayDocument, rest: str, cursor: int
) -> int | None:
    """The index of the session's last keystroke when the keystrokes from `index` on type
    exactly `rest` at `cursor` in `document` (None when they do not)."""
    target = document.text[:cursor] + rest + document.text[cursor:]
    doc = copy.copy(document)
    events = session.events
    for j in range(index, min(len(events), index + LOOKAHEAD)):
        msg = events[j].msg
        method = msg.get("method")
        if method == "$/cancelRequest" or ("id" in msg and method in TRACKED):
            continue
        if method != "textDocument/didChange" or msg["params"]["textDocument"]["uri"] != doc.uri:
            return None
        doc.apply(msg["params"]["contentChanges"], doc.version + 1)
        if doc.text == target:
            return j
        typed = _typed(doc.text, document.text, cursor)
        if typed is None or not rest.startswith(typed):
            return None
    return None


def _typed(text: str, before: str, cursor: int) -> str | None:
    """What was typed at `cursor` into `before` to make `text` (None: not an insertion there)."""
    tail = len(before) - cursor
    if len(text) < len(before) or text[:cursor] != before[:cursor]:
        return None
    if tail and text[len(text) - tail :] != before[cursor:]:
        return None
    return text[cursor : len(text) - tail]


def skip_until(session: Session, last: int) -> int:
    """The first event after keystroke `last` that is not its cancel or its request."""
    j = last + 1
    events = session.events
    while j < len(events) and events[j].msg.get("method") != "textDocument/didChange":
        msg = events[j].msg
        if msg.get("method") != "$/cancelRequest" and "id" not in msg:
            break
        j += 1
    return j


def accepted_id(record: RequestRecord) -> Any:
    """The suggestion id in an answer's first item's accept command, if any."""
    result = record.result
    items = result.get("items", []) if isinstance(result, dict) else result
    if not isinstance(items, list) or not items or not isinstance(items[0], dict):
        return None
    command = items[0].get("command") or {}
    args = command.get("arguments") or []
    return args[0].get("id") if args and isinstance(args[0], dict) else None


def figures(traces: list[SessionTrace], server_stats: Any) -> dict[str, Any]:
    """accepts; accept -> next suggestion (ms, over those with one; each listed); the accepts
    whose next request answered nothing to suggest (before the next key: an accept that ends a
    block often leaves nothing to add) and those the next key superseded; accept -> next answer
    (ms, suggestion or nothing to suggest: how long the editor waits to know); prefetch hits."""
    waits: list[float] = []
    empty: list[float] = []  # answered with no suggestion, before the next key (nothing to add)
    superseded = accepts = 0
    for trace in traces:
        for record in trace.requests:
            if record.accepted_at is None:
                continue
            accepts += 1
            if record.arrived is None or record.error is not None:
                continue
            wait = (record.arrived - record.accepted_at) * 1000.0
            if suggestion_of(record, trace.encoding) is not None:
                waits.append(wait)
            elif record.arrived_version == record.version:
                empty.append(wait)
            else:  # the next key came first: the server answered the outdated request empty
                superseded += 1
    prefetch = (server_stats or {}).get("prefetch") or {} if isinstance(server_stats, dict) else {}
    hits = prefetch.get("hits")
    return {
        "accepts": accepts,
        "accepts_with_suggestion": len(waits),
        "accept_to_suggestion_ms": percentiles(waits, (50, 90)),
        "accept_waits_ms": sorted(round(w, 1) for w in waits),  # each, for the record
        "accepts_answered_empty": len(empty),
        "accepts_superseded": superseded,
        "accept_to_answer_ms": percentiles(waits + empty, (50, 90)),
        "accept_empty_waits_ms": sorted(round(w, 1) for w in empty),
        "prefetch_hits": hits,
        "accepts_from_prefetch": round(hits / accepts, 3) if accepts and hits is not None else None,
    }
