"""The figures, on hand-made traces whose right answers are known."""

from __future__ import annotations

from spec_lsp.replay.analysis import analyze, percentiles
from spec_lsp.replay.document import Edit
from spec_lsp.replay.trace import Change, RequestRecord, SessionTrace

URI = "file:///t.py"


class Typing:
    """Builds a trace: text typed at the end of the document, requests, answers."""

    def __init__(self, text: str = "x = ") -> None:
        self.trace = SessionTrace(name="t", encoding="utf-16")
        self.text, self.version = text, 1
        self.trace.changes.append(Change(URI, 0.0, 1, text))

    def key(self, t: float, typed: str, gap_ms: float = 100.0) -> None:
        edit = Edit(len(self.text), 0, typed)
        self.text += typed
        self.version += 1
        self.trace.changes.append(Change(URI, t, self.version, self.text, [edit], gap_ms))

    def backspace(self, t: float, gap_ms: float = 100.0) -> None:
        edit = Edit(len(self.text) - 1, 1, "")
        self.text = self.text[:-1]
        self.version += 1
        self.trace.changes.append(Change(URI, t, self.version, self.text, [edit], gap_ms))

    def ask(self, t: float) -> RequestRecord:
        n = len(self.trace.requests) + 1
        record = RequestRecord(
            n, n, "textDocument/inlineCompletion", URI, t, self.version, self.text, len(self.text)
        )
        self.trace.requests.append(record)
        return record

    @staticmethod
    def answer(record: RequestRecord, t: float, text: str | None) -> None:
        record.arrived = t
        record.result = {"items": [{"insertText": text}]} if text else {"items": []}


def test_an_answer_that_no_longer_fits_is_stale_unless_the_client_cancelled_it() -> None:
    typing = Typing()
    first = typing.ask(0.0)
    typing.key(0.1, "4")
    second = typing.ask(0.1)
    second.cancel_sent = 0.15
    typing.key(0.2, "2")
    typing.answer(first, 0.3, "1 + 1")  # the document is "x = 42" now: stale, and shown
    typing.answer(second, 0.3, "0")  # stale too, but the client had cancelled it
    figures, _ = analyze([typing.trace])
    assert (figures["stale_shown"], figures["stale_dropped"], figures["shown"]) == (1, 1, 0)


def test_an_answer_the_user_typed_into_still_fits() -> None:
    typing = Typing()
    record = typing.ask(0.0)
    typing.key(0.1, "1", gap_ms=900)
    typing.answer(record, 0.2, "1 + 1")
    figures, _ = analyze([typing.trace])
    assert (figures["stale_shown"], figures["shown"]) == (0, 1)
    assert figures["pause_to_suggestion_ms"]["p50"] == 100.0


def test_pause_to_suggestion_runs_from_the_keystroke_to_the_first_fitting_answer() -> None:
    typing = Typing()
    typing.key(1.0, "a", gap_ms=100)  # no pause
    typing.ask(1.0)
    typing.key(1.1, "b", gap_ms=500)  # a pause
    late = typing.ask(1.1)
    typing.answer(late, 1.35, "cd")
    typing.key(1.6, "c", gap_ms=2000)  # a pause: the shown "cd" was typed through, still shown
    typing.ask(1.6)
    figures, _ = analyze([typing.trace])
    assert figures["pauses"] == 2 and figures["typed_through_pauses"] == 1
    _, tally = analyze([typing.trace])
    assert sorted(round(w, 3) for w in tally.pause_waits) == [0.0, 250.0]
    # each pause, when it began and what it waited, per session (None: missed)
    assert figures["per_session"][0]["pause_log"] == [[1.1, 250.0], [1.6, 0.0]]
    typing.key(3.7, "d", gap_ms=900)  # a pause without a suggestion
    figures, _ = analyze([typing.trace])
    assert figures["per_session"][0]["pause_log"][-1] == [3.7, None]


def test_a_pause_with_only_empty_answers_has_no_suggestion() -> None:
    typing = Typing()
    typing.key(1.0, "a", gap_ms=800)
    typing.answer(typing.ask(1.0), 1.1, None)
    figures, _ = analyze([typing.trace])
    assert (figures["pauses"], figures["pauses_with_suggestion"], figures["empty"]) == (1, 0, 1)
    assert figures["pause_to_suggestion_ms"]["p50"] is None


def test_each_missed_pause_is_put_down_to_one_reason() -> None:
    typing = Typing()
    typing.key(1.0, "a", gap_ms=500)  # answered in the pause, with nothing to add
    typing.answer(typing.ask(1.0), 1.2, None)
    typing.key(1.5, "b", gap_ms=400)  # answered after the next keystroke: too late
    slow = typing.ask(1.5)
    typing.key(1.9, "c", gap_ms=600)  # cancelled by the next keystroke, never answered
    cancelled = typing.ask(1.9)
    typing.answer(slow, 2.0, "dd")  # arrives in the next pause, stale there
    cancelled.cancel_sent = 2.5
    cancelled.arrived, cancelled.error = 2.55, {"code": -32800, "message": "cancelled"}
    typing.key(2.5, "d", gap_ms=700)  # nothing asked
    typing.key(3.2, "e", gap_ms=800)  # answered in time: not missed
    typing.answer(typing.ask(3.2), 3.3, "f")
    figures, _ = analyze([typing.trace])
    assert (figures["pauses"], figures["pauses_with_suggestion"]) == (5, 1)
    assert figures["pauses_missed"] == {"empty": 1, "stale": 0, "late": 2, "no request": 1}
    assert figures["per_session"][0]["missed_pauses"] == [
        [1.0, 500.0, "empty", "x = a"],
        [1.5, 400.0, "late", "x = ab"],
        [1.9, 600.0, "late", "x = abc"],
        [2.5, 700.0, "no request", "x = abcd"],
    ]


def test_predicted_chars_count_what_the_user_typed_next_that_the_suggestion_had() -> None:
    typing = Typing()
    typing.key(1.0, "r", gap_ms=1000)
    typing.answer(typing.ask(1.0), 1.1, "eturn x")
    for i, ch in enumerate("eturm"):  # a typo at the 5th key, fixed: "eturn" in the end
        typing.key(2.0 + i / 10, ch)
    typing.backspace(2.6)
    typing.key(2.7, "n", gap_ms=1000)
    typing.answer(typing.ask(2.7), 2.8, " x")  # predicts " x", then the user types " y"
    typing.key(4.0, " ")
    typing.key(4.1, "y", gap_ms=1000)
    figures, _ = analyze([typing.trace])
    # 1st pause: "eturn " of "eturn x" (the typo and its fix are not credited); 2nd: " " of
    # " x", already counted: each typed character counts once.
    assert figures["predicted_chars"] == 6
    assert figures["typed_chars"] == len("returm") + len("n y")


def test_requests_are_split_into_answered_cancelled_errors_and_unanswered() -> None:
    typing = Typing()
    typing.answer(typing.ask(0.0), 0.05, "1")
    cancelled = typing.ask(0.1)
    cancelled.arrived, cancelled.error = 0.2, {"code": -32800, "message": "cancelled"}
    failed = typing.ask(0.3)
    failed.arrived, failed.error = 0.4, {"code": -32603, "message": "boom"}
    typing.ask(0.5)
    figures, _ = analyze([typing.trace])
    counts = [figures[k] for k in ("requests", "answered", "cancelled", "errors", "unanswered")]
    assert counts == [4, 1, 1, 1, 1]
    assert figures["latency_ms"]["p50"] == 50.0 and figures["latency_ms"]["max"] == 50.0


def test_percentiles_interpolate_between_ranks() -> None:
    assert percentiles([10.0, 20.0, 30.0, 40.0], (50, 90)) == {"p50": 25.0, "p90": 37.0}
    assert percentiles([], (50,)) == {"p50": None}


def test_pauses_answered_within_400_ms_are_counted_over_all_pauses() -> None:
    typing = Typing()
    typing.key(1.0, "a", gap_ms=900)  # shown 100 ms into the pause
    typing.answer(typing.ask(1.0), 1.1, "b")
    typing.key(1.9, "c", gap_ms=900)  # shown 600 ms into the pause: answered, not soon
    typing.answer(typing.ask(1.9), 2.5, "d")
    typing.key(2.8, "e", gap_ms=900)  # never answered
    typing.ask(2.8)
    figures, _ = analyze([typing.trace])
    assert (figures["pauses"], figures["pauses_with_suggestion"]) == (3, 2)
    assert figures["pauses_answered_soon"] == 1
