"""The worker's queue (`spec_lsp/lanes.py`): FIFO within a lane, the freshest lane first.

The clock is a list the test advances, so every order is forced by the calls, not by timing.
"""

from __future__ import annotations

import threading

from spec_lsp.lanes import Lanes


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0  # every reading is later than the one before
        return self.now


def drained(lanes: Lanes[str]) -> list[str]:
    out = []
    while not lanes.empty():
        item = lanes.get()
        assert item is not None
        out.append(item)
    return out


def test_one_lane_is_first_in_first_out() -> None:
    lanes: Lanes[str] = Lanes(Clock())
    for item in ("a", "b", "c"):
        lanes.put(None, item)
    lanes.touch(None)
    assert drained(lanes) == ["a", "b", "c"]


def test_the_lane_of_the_newest_keystroke_goes_first_whenever_its_jobs_were_queued() -> None:
    lanes: Lanes[str] = Lanes(Clock())
    lanes.put("quiet", "quiet-1")
    lanes.put("typing", "typing-1")
    lanes.put("quiet", "quiet-2")
    lanes.touch("quiet")
    lanes.touch("typing")  # the user types in this window now
    assert drained(lanes) == ["typing-1", "quiet-1", "quiet-2"]


def test_a_lane_never_touched_is_as_fresh_as_its_first_job() -> None:
    lanes: Lanes[str] = Lanes(Clock())
    lanes.touch("a")
    lanes.put("b", "b-1")  # queued after a's keystroke
    lanes.put("a", "a-1")
    assert drained(lanes) == ["b-1", "a-1"]


def test_a_forgotten_lane_goes_after_every_live_one() -> None:
    lanes: Lanes[str] = Lanes(Clock())
    lanes.put("gone", "gone-1")
    lanes.touch("gone")
    lanes.put("live", "live-1")
    lanes.forget("gone")
    assert drained(lanes) == ["live-1", "gone-1"]


def test_touching_reorders_lanes_but_never_the_jobs_inside_one() -> None:
    lanes: Lanes[str] = Lanes(Clock())
    for item in ("a-1", "a-2", "a-3"):
        lanes.put("a", item)
    lanes.put("b", "b-1")
    lanes.touch("a")
    assert lanes.get() == "a-1"
    lanes.touch("b")
    assert lanes.get() == "b-1"
    assert drained(lanes) == ["a-2", "a-3"]


def test_a_closed_queue_refuses_puts_wakes_its_reader_and_drains_what_is_left() -> None:
    lanes: Lanes[str] = Lanes(Clock())
    got: list[str | None] = []
    reader = threading.Thread(target=lambda: got.append(lanes.get()))
    reader.start()
    lanes.close()
    reader.join(30)
    assert got == [None]
    assert not lanes.put("a", "late")
    assert lanes.drain() == []


def test_drain_takes_every_lane_oldest_lane_first() -> None:
    lanes: Lanes[str] = Lanes(Clock())
    lanes.put("a", "a-1")
    lanes.put("b", "b-1")
    lanes.put("a", "a-2")
    lanes.close()
    assert lanes.get() is None
    assert lanes.drain() == ["a-1", "a-2", "b-1"]
    assert lanes.empty()
