"""Figures from replay traces: what a user would have felt, simulated like an editor.

The simulated editor shows the latest non-empty answer that still fits the document when it
arrives, unless the client had already cancelled that request (editors drop those); it keeps a
shown suggestion while the user types through it and clears it otherwise. A "pause" is a
keystroke followed by at least `pause_ms` (replayed) without another one. At each pause:
- pause_to_suggestion: from the keystroke until a suggestion valid for that document is shown
  (0 when one typed through was still shown); pauses with none are counted as missed;
- predicted chars: the shown suggestion is accepted in simulation and compared with what the
  user typed next at the cursor; each typed character is counted once;
- a missed pause is put down to one reason (`MISS_REASONS`), so a run says what to work on.
stale_shown counts non-empty answers that did not fit the document when they arrived and were
not cancelled by the client (an editor would have shown them); stale_dropped the cancelled ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from spec_lsp.replay.client import REQUEST_CANCELLED, SERVER_CANCELLED
from spec_lsp.replay.document import offset_of
from spec_lsp.replay.trace import RequestRecord, SessionTrace


@dataclass(frozen=True)
class ShownSuggestion:
    """The document that asked (`base`), the range the answer replaces, and its text."""

    base: str
    start: int
    end: int
    text: str

    def remaining(self, doc: str) -> str | None:
        """What is left to show over `doc`, or None when the suggestion no longer fits it."""
        prefix_len, suffix_len = self.start, len(self.base) - self.end
        if len(doc) < prefix_len + suffix_len:
            return None
        if (
            doc[:prefix_len] != self.base[:prefix_len]
            or doc[len(doc) - suffix_len :] != self.base[self.end :]
        ):
            return None
        typed = doc[prefix_len : len(doc) - suffix_len]
        if len(typed) >= len(self.text) or not self.text.startswith(typed):
            return None
        return self.text[len(typed) :]


def _item_text(value: Any) -> str:
    if isinstance(value, dict):  # StringValue (snippet)
        return str(value.get("value", ""))
    return value if isinstance(value, str) else ""


def suggestion_of(record: RequestRecord, encoding: str) -> ShownSuggestion | None:
    """The first item of an answer as a ShownSuggestion; None for an empty answer."""
    result = record.result
    items = result.get("items", []) if isinstance(result, dict) else result
    if not isinstance(items, list) or not items or not isinstance(items[0], dict):
        return None
    item = items[0]
    text, lsp_range = "", item.get("range")
    if record.method == "textDocument/inlineCompletion":
        text = _item_text(item.get("insertText"))
    else:
        edit = item.get("textEdit")
        if isinstance(edit, dict):
            text, lsp_range = str(edit.get("newText", "")), edit.get("range") or edit.get("insert")
        else:
            text, lsp_range = str(item.get("insertText") or item.get("label") or ""), None
    if not text:
        return None
    start = end = record.cursor
    if isinstance(lsp_range, dict):
        start = _offset(record.text, lsp_range["start"], encoding)
        end = max(start, _offset(record.text, lsp_range["end"], encoding))
    suggestion = ShownSuggestion(record.text, start, end, text)
    return suggestion if suggestion.remaining(record.text) is not None else None


def _offset(text: str, position: dict[str, Any], encoding: str) -> int:
    return offset_of(text, int(position["line"]), int(position["character"]), encoding)


def _line_before(text: str, cursor: int) -> str:
    return text[text.rfind("\n", 0, cursor) + 1 : cursor]


def percentiles(values: list[float], qs: tuple[int, ...] = (50, 90, 99)) -> dict[str, float | None]:
    """Linear-interpolation percentiles, rounded to 0.1 ms; None when there are no values."""
    out: dict[str, float | None] = {}
    ordered = sorted(values)
    for q in qs:
        if not ordered:
            out[f"p{q}"] = None
            continue
        pos = (len(ordered) - 1) * q / 100.0
        lo, hi = math.floor(pos), math.ceil(pos)
        value = ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
        out[f"p{q}"] = round(value, 1)
    return out


# Why a pause got no suggestion, first match wins, from the requests sent for its document
# between the keystroke and the next change:
# - "empty": one was answered in the pause with nothing to add (or an error);
# - "stale": one was answered in the pause with text that no longer fit the document;
# - "late": one was still running when the next change came (cancelled by it, or answered
#   after it): the answer took longer than the pause;
# - "no request": none was sent (the client asked nothing).
MISS_REASONS = ("empty", "stale", "late", "no request")
# A pause answered this soon counts as answered in time (`pauses_answered_soon`): the p90 the
# product aims at (issue 38), counted over all pauses rather than over the answered ones alone.
SOON_MS = 400.0


@dataclass
class Tally:
    requests: int = 0
    answered: int = 0
    cancelled: int = 0
    errors: int = 0
    unanswered: int = 0
    empty: int = 0
    shown: int = 0
    stale_shown: int = 0
    stale_dropped: int = 0
    cancels_sent: int = 0
    pauses: int = 0
    typed_through: int = 0
    typed_chars: int = 0
    predicted_chars: int = 0
    latencies: list[float] = field(default_factory=list)
    pause_waits: list[float] = field(default_factory=list)
    # per pause: when it began (seconds into the session's replay),
    # and its wait in ms (None: missed)
    pause_log: list[tuple[float, float | None]] = field(default_factory=list)
    # per missed pause: when it began (s), how long it lasted (ms), why (MISS_REASONS), and the
    # cursor's line up to the cursor (its last 60 characters)
    missed: list[tuple[float, float | None, str, str]] = field(default_factory=list)
    # for the plot: per session, its name and its (sent or t, arrived or None, kind) events
    timeline: list[tuple[str, list[tuple[float, float | None, str]]]] = field(default_factory=list)


@dataclass
class _Pause:
    change_index: int
    start: float
    shown_at: float | None = None


class SessionAnalysis:
    """Walks one trace's changes and answers in time order, as an editor would see them."""

    def __init__(self, trace: SessionTrace, pause_ms: float, tally: Tally) -> None:
        self.trace = trace
        self.pause_ms = pause_ms
        self.tally = tally
        self.shown: dict[str, ShownSuggestion] = {}
        self.current: dict[str, str] = {}
        self.pause: _Pause | None = None
        self.predicted: set[int] = set()
        self.typed_index: list[list[int]] = []  # per change, per edit: first typed-char index
        self.events: list[tuple[float, float | None, str]] = []

    def run(self) -> None:
        self._index_typed_chars()
        timeline: list[tuple[float, int, int]] = [
            (c.t, 0, i) for i, c in enumerate(self.trace.changes)
        ]
        timeline += [
            (r.arrived, 1, i) for i, r in enumerate(self.trace.requests) if r.arrived is not None
        ]
        timeline.sort()
        for t, kind, index in timeline:
            if kind == 0:
                self._on_change(index)
            else:
                self._on_answer(self.trace.requests[index], t)
        self._close_pause(len(self.trace.changes))
        for record in self.trace.requests:
            self._count_request(record)
        self.tally.predicted_chars += len(self.predicted)
        self.tally.timeline.append((self.trace.name, self.events))

    def _index_typed_chars(self) -> None:
        count = 0
        for change in self.trace.changes:
            firsts = []
            for edit in change.edits:
                firsts.append(count)
                count += len(edit.text)
            self.typed_index.append(firsts)
        self.tally.typed_chars += count

    def _on_change(self, index: int) -> None:
        change = self.trace.changes[index]
        self._close_pause(index)
        self.current[change.uri] = change.text
        if change.is_keystroke:
            self.events.append((change.t, None, "key"))
        shown = self.shown.get(change.uri)
        if shown is not None and shown.remaining(change.text) is None:
            del self.shown[change.uri]
        if change.is_keystroke and change.gap_ms is not None and change.gap_ms >= self.pause_ms:
            self.pause = _Pause(index, change.t)
            if change.uri in self.shown:
                self.pause.shown_at = change.t
                self.tally.typed_through += 1

    def _on_answer(self, record: RequestRecord, t: float) -> None:
        if record.error is not None:
            return
        suggestion = suggestion_of(record, self.trace.encoding)
        if suggestion is None:
            return
        doc = self.current.get(record.uri, "")
        cancelled = record.cancel_sent is not None and record.cancel_sent <= t
        if suggestion.remaining(doc) is None:
            if cancelled:
                self.tally.stale_dropped += 1
            else:
                self.tally.stale_shown += 1
                self.events.append((record.sent, t, "stale"))
            return
        if cancelled:
            return
        self.shown[record.uri] = suggestion
        self.tally.shown += 1
        self.events.append((record.sent, t, "shown"))
        pause = self.pause
        if (
            pause is not None
            and pause.shown_at is None
            and self.trace.changes[pause.change_index].uri == record.uri
        ):
            pause.shown_at = t

    def _close_pause(self, next_index: int) -> None:
        pause, self.pause = self.pause, None
        if pause is None:
            return
        self.tally.pauses += 1
        wait = None if pause.shown_at is None else (pause.shown_at - pause.start) * 1000.0
        if wait is not None:
            self.tally.pause_waits.append(wait)
        self.tally.pause_log.append(
            (round(pause.start, 2), None if wait is None else round(wait, 1))
        )
        change = self.trace.changes[pause.change_index]
        if wait is None:
            end = (
                self.trace.changes[next_index].t
                if next_index < len(self.trace.changes)
                else math.inf
            )
            self.tally.missed.append(
                (
                    round(pause.start, 2),
                    None if change.gap_ms is None else round(change.gap_ms, 1),
                    self._miss_reason(change.uri, pause.start, end),
                    _line_before(change.text, change.edits[-1].end_after)[-60:],
                )
            )
        suggestion = self.shown.get(change.uri)
        ghost = suggestion.remaining(change.text) if suggestion is not None else None
        if ghost:
            self.predicted.update(self._typed_next(pause.change_index, next_index, ghost))

    def _miss_reason(self, uri: str, start: float, end: float) -> str:
        """Why the pause from `start` to `end` got no suggestion (one of MISS_REASONS)."""
        asked = [r for r in self.trace.requests if r.uri == uri and start <= r.sent < end]
        if not asked:
            return "no request"
        stale = False
        for record in asked:
            if record.arrived is None or record.arrived >= end:
                continue  # still running when the next change came
            if record.error is None:
                if suggestion_of(record, self.trace.encoding) is None:
                    return "empty"
                stale = True  # text that did not fit: it would have been shown otherwise
            elif record.error.get("code") not in (REQUEST_CANCELLED, SERVER_CANCELLED):
                return "empty"
        return "stale" if stale else "late"

    def _typed_next(self, index: int, next_index: int, ghost: str) -> list[int]:
        """Indices of the characters typed after change `index` that `ghost` had predicted."""
        change = self.trace.changes[index]
        cursor = change.edits[-1].end_after
        chars: list[str] = []
        indices: list[int] = []
        for i in range(next_index, min(len(self.trace.changes), next_index + 400)):
            later = self.trace.changes[i]
            if later.uri != change.uri or not later.edits:
                break
            ok = True
            for edit, first in zip(later.edits, self.typed_index[i], strict=True):
                if edit.old_len == 0 and edit.start == cursor:
                    chars.extend(edit.text)
                    indices.extend(range(first, first + len(edit.text)))
                    cursor += len(edit.text)
                elif (
                    not edit.text
                    and edit.start + edit.old_len == cursor
                    and edit.old_len <= len(chars)
                ):
                    del chars[len(chars) - edit.old_len :], indices[len(indices) - edit.old_len :]
                    cursor -= edit.old_len
                else:
                    ok = False
                    break
            if not ok or len(chars) > len(ghost) + 40:
                break
        matched = 0
        while matched < min(len(ghost), len(chars)) and ghost[matched] == chars[matched]:
            matched += 1
        return indices[:matched]

    def _count_request(self, record: RequestRecord) -> None:
        tally = self.tally
        tally.requests += 1
        tally.cancels_sent += record.cancel_sent is not None
        if record.arrived is None:
            tally.unanswered += 1
        elif record.error is not None:
            code = (record.error or {}).get("code")
            if code in (REQUEST_CANCELLED, SERVER_CANCELLED):
                tally.cancelled += 1
                self.events.append((record.sent, record.arrived, "cancelled"))
            else:
                tally.errors += 1
        else:
            tally.answered += 1
            latency = record.latency_ms
            assert latency is not None
            tally.latencies.append(latency)
            if suggestion_of(record, self.trace.encoding) is None:
                tally.empty += 1
                self.events.append((record.sent, record.arrived, "empty"))


def analyze(traces: list[SessionTrace], pause_ms: float = 300.0) -> tuple[dict[str, Any], Tally]:
    """The report's figures for a run, and the raw tally (for the plot)."""
    tally = Tally()
    per_session = []
    for trace in traces:
        session_tally = Tally()
        SessionAnalysis(trace, pause_ms, session_tally).run()
        per_session.append(
            _figures(session_tally)
            | {
                "name": trace.name,
                "pause_log": [list(p) for p in session_tally.pause_log],
                "missed_pauses": [list(m) for m in session_tally.missed],
            }
        )
        _merge(tally, session_tally)
    figures = _figures(tally)
    figures["per_session"] = per_session
    figures["late_ms_max"] = round(max((t.late_ms_max for t in traces), default=0.0), 1)
    return figures, tally


def _merge(total: Tally, part: Tally) -> None:
    for name, value in vars(part).items():
        if isinstance(value, list):
            getattr(total, name).extend(value)
        else:
            setattr(total, name, getattr(total, name) + value)


def _figures(t: Tally) -> dict[str, Any]:
    latency = percentiles(t.latencies, (50, 90, 99))
    latency["max"] = round(max(t.latencies), 1) if t.latencies else None
    pause = percentiles(t.pause_waits, (50, 90, 99))
    return {
        "requests": t.requests,
        "answered": t.answered,
        "cancelled": t.cancelled,
        "errors": t.errors,
        "unanswered": t.unanswered,
        "empty": t.empty,
        "shown": t.shown,
        "stale_shown": t.stale_shown,
        "stale_dropped": t.stale_dropped,
        "cancels_sent": t.cancels_sent,
        "latency_ms": latency,
        "pause_to_suggestion_ms": pause,
        "pauses": t.pauses,
        "pauses_with_suggestion": len(t.pause_waits),
        # of all pauses, those whose suggestion came within SOON_MS (the missed ones never did)
        "pauses_answered_soon": sum(1 for w in t.pause_waits if w <= SOON_MS),
        "pause_waits_ms": sorted(round(w, 1) for w in t.pause_waits),  # each, for the record
        "typed_through_pauses": t.typed_through,
        "pauses_missed": {
            reason: sum(1 for m in t.missed if m[2] == reason) for reason in MISS_REASONS
        },
        "predicted_chars": t.predicted_chars,
        "typed_chars": t.typed_chars,
    }
