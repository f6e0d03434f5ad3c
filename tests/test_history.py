"""The edit history: didChange edits coalesced into hunks as a person makes them."""

from __future__ import annotations

from spec_lsp.completion.history import MAX_HUNKS, EditHistory, Hunk


class Doc:
    """A document's lines, edited as the service does, recorded into a history."""

    def __init__(self, text: str, history: EditHistory) -> None:
        self.lines = text.split("\n")
        self.history = history

    def edit(self, r1: int, c1: int, r2: int, c2: int, text: str) -> None:
        replaced = self.lines[r1 : r2 + 1]
        head, tail = self.lines[r1][:c1], self.lines[r2][c2:]
        self.lines[r1 : r2 + 1] = (head + text + tail).split("\n")
        self.history.record("u", replaced, r1, self.lines, text.count("\n"))


def clock(times: list[float]):  # type: ignore[no-untyped-def]
    return lambda: times[0]


def test_a_burst_of_typing_on_one_line_is_one_hunk() -> None:
    h = EditHistory(clock([0.0]))
    doc = Doc("a = 1\nb = 2\n", h)
    for i, ch in enumerate("xyz"):
        doc.edit(0, 5 + i, 0, 5 + i, ch)
    assert h.hunks("u") == [Hunk(0, ["a = 1"], ["a = 1xyz"], 0.0)]


def test_a_line_broken_and_typed_on_is_one_hunk() -> None:
    h = EditHistory(clock([0.0]))
    doc = Doc("def f():\n    pass\n", h)
    doc.edit(0, 8, 0, 8, "\n    x = 1")
    doc.edit(1, 9, 1, 9, "0")
    (hunk,) = h.hunks("u")
    assert (hunk.start, hunk.old, hunk.new) == (0, ["def f():"], ["def f():", "    x = 10"])
    assert hunk.diff() == "@@ -1,1 +1,2 @@\n-def f():\n+def f():\n+    x = 10\n"


def test_the_next_line_or_a_later_edit_is_a_new_hunk() -> None:
    times = [0.0]
    h = EditHistory(clock(times))
    doc = Doc("a\nb\nc\n", h)
    doc.edit(0, 1, 0, 1, "1")
    doc.edit(1, 1, 1, 1, "2")  # the next line: its own hunk
    times[0] = 100.0
    doc.edit(1, 2, 1, 2, "3")  # same line, long after
    assert [(x.start, x.old, x.new) for x in h.hunks("u")] == [
        (0, ["a"], ["a1"]),
        (1, ["b"], ["b2"]),
        (1, ["b2"], ["b23"]),
    ]


def test_typed_then_deleted_leaves_no_hunk_and_lines_below_move() -> None:
    h = EditHistory(clock([0.0]))
    doc = Doc("a\nb\nc\nd\n", h)
    doc.edit(3, 1, 3, 1, "!")
    doc.edit(0, 1, 0, 1, "\nnew")  # two lines where one was: the hunk below moves down
    assert [x.start for x in h.hunks("u")] == [4, 0]
    doc.edit(0, 1, 1, 3, "")  # and back
    assert [(x.start, x.new) for x in h.hunks("u")] == [(3, ["d!"])]


def test_bounded_and_forgotten() -> None:
    h = EditHistory(clock([0.0]))
    doc = Doc("\n".join(f"line {i}" for i in range(100)), h)
    for i in range(0, 60, 2):
        doc.edit(i, 0, i, 0, "#")
    assert len(h.hunks("u")) == MAX_HUNKS
    doc.edit(99, 0, 99, 7, "x" * 10_000)
    assert len(h.hunks("u")[-1].new[0]) <= 2000
    h.forget("u")
    assert h.hunks("u") == []


def test_a_whole_text_change_is_diffed_into_hunks() -> None:
    h = EditHistory(clock([0.0]))
    h.record_whole("u", ["a", "b", "c"], ["a", "B", "c", "d"])
    assert [(x.start, x.old, x.new) for x in h.hunks("u")] == [(1, ["b"], ["B"]), (3, [], ["d"])]
