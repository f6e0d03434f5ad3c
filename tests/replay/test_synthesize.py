"""Synthesized sessions: valid, deterministic, and they type the region back exactly."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from spec_lsp.replay.document import ReplayDocument
from spec_lsp.replay.format import Session, read_session
from spec_lsp.replay.synthesize import (
    Timing,
    build_session,
    line_regions,
    patient,
    python_regions,
    synthesize,
)

SOURCE = '''import os


def join_all(parts, sep="/"):
    """Joins the non-empty parts."""
    kept = [p for p in parts if p]
    return sep.join(kept)


async def fetch(url):
    data = await get(url)  # ünïcode 😀 in a comment
    return data.decode("utf-8")
'''


def final_text(session: Session) -> str:
    opened = session.events[0].msg["params"]["textDocument"]
    doc = ReplayDocument(opened["uri"], opened["languageId"], opened["version"], opened["text"])
    for event in session.events:
        if event.method == "textDocument/didChange":
            params = event.msg["params"]
            doc.apply(params["contentChanges"], params["textDocument"]["version"])
    return doc.text


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "example.py"
    path.write_text(SOURCE, encoding="utf-8")
    return path


def test_python_regions_are_function_bodies() -> None:
    bodies = {r.name: SOURCE[r.start : r.end] for r in python_regions(SOURCE)}
    assert bodies["join_all"].startswith('"""Joins') and bodies["join_all"].endswith(
        "sep.join(kept)"
    )
    assert bodies["fetch"].startswith("data = await") and bodies["fetch"].endswith(
        'decode("utf-8")'
    )


def test_other_languages_fall_back_to_blocks_of_lines() -> None:
    text = "".join(f"line {i};\n" for i in range(12))
    regions = line_regions(text, lines=5)
    assert [text[r.start : r.end] for r in regions][0] == "".join(f"line {i};\n" for i in range(5))[
        :-1
    ]


def test_synthesis_is_deterministic_byte_for_byte(source: Path, tmp_path: Path) -> None:
    first = synthesize([source], tmp_path / "a", seed=3, per_file=2, min_chars=10)
    second = synthesize([source], tmp_path / "b", seed=3, per_file=2, min_chars=10)
    assert [p.name for p in first] == [p.name for p in second] and len(first) == 2
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(first, second, strict=True))


def test_another_seed_gives_other_timing(source: Path) -> None:
    region = python_regions(SOURCE)[0]
    a = build_session(source, SOURCE, region, seed=1)
    b = build_session(source, SOURCE, region, seed=2)
    assert [e.t for e in a.events] != [e.t for e in b.events]


@pytest.mark.parametrize("typo_rate", [0.0, 0.3])
def test_typing_the_session_back_gives_the_original_file(source: Path, typo_rate: float) -> None:
    for region in python_regions(SOURCE):
        session = build_session(source, SOURCE, region, seed=5, timing=Timing(typo_rate=typo_rate))
        assert final_text(session) == SOURCE


def test_typos_are_fixed_with_backspace(source: Path) -> None:
    region = python_regions(SOURCE)[0]
    session = build_session(source, SOURCE, region, seed=5, timing=Timing(typo_rate=0.3))
    changes = [
        e.msg["params"]["contentChanges"][0]
        for e in session.events
        if e.method == "textDocument/didChange"
    ]
    assert any(c["text"] == "" and c["rangeLength"] == 1 for c in changes)


def test_every_keystroke_asks_and_cancels_the_pending_request(source: Path, tmp_path: Path) -> None:
    [path] = synthesize([source], tmp_path, seed=0, per_file=1, min_chars=10)
    session = read_session(path)  # also validates the file
    methods = [e.method for e in session.events]
    assert methods[0] == "textDocument/didOpen" and methods[-1] == "textDocument/didClose"
    keystrokes = [i for i, m in enumerate(methods) if m == "textDocument/didChange"]
    for n, i in enumerate(keystrokes):
        request = session.events[i + 1]
        assert (
            request.method == "textDocument/inlineCompletion" and request.t == session.events[i].t
        )
        if n > 0:
            cancel = session.events[i - 1]
            assert cancel.method == "$/cancelRequest"
            assert cancel.msg["params"]["id"] == session.events[keystrokes[n - 1] + 1].msg["id"]


def test_timing_has_bursts_and_pauses(tmp_path: Path) -> None:
    stdlib = Path(statistics.__file__)
    [path] = synthesize([stdlib], tmp_path, seed=0, per_file=1, min_chars=200, max_chars=400)
    session = read_session(path)
    times = [e.t for e in session.events if e.method == "textDocument/didChange"]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert statistics.median(gaps) < 250
    assert sum(g >= 300 for g in gaps) >= 3


def test_a_patient_user_pauses_at_every_line_start(source: Path, tmp_path: Path) -> None:
    """`--line-pause-ms`: time to read the suggestion (and, in a replay, for the prefetch of
    the suggestion after its accept to finish) before typing on or accepting."""
    [path] = synthesize([source], tmp_path, seed=0, per_file=1, min_chars=10, timing=patient(900))
    session = read_session(path)
    changes = [e for e in session.events if e.method == "textDocument/didChange"]
    after_enter = [
        later.t - change.t
        for change, later in zip(changes, changes[1:], strict=False)
        if change.msg["params"]["contentChanges"][0]["text"].startswith("\n")
    ]
    assert after_enter and all(gap >= 900 for gap in after_enter)
    assert final_text(session) == SOURCE


ACCEPT_SESSIONS = Path(__file__).parents[1] / "sessions-accept"
STDLIB = Path("/usr/lib/python3.11")


def test_the_accept_sessions_are_valid_and_come_from_their_documented_command(
    tmp_path: Path,
) -> None:
    """docs/sessions.md's command gives tests/sessions-accept/ byte for byte."""
    sessions = sorted(ACCEPT_SESSIONS.glob("*.jsonl"))
    assert len(sessions) == 4
    for path in sessions:
        assert read_session(path).duration_ms > 30_000
    files = [
        STDLIB / f"{n}.py" for n in ("genericpath", "posixpath", "heapq", "reprlib", "operator")
    ]
    if not all(f.exists() for f in files):
        pytest.skip("the standard library's sources are not at /usr/lib/python3.11")
    names = ("isdir", "isfile", "lexists", "_heappop_max")
    written = synthesize(files, tmp_path, seed=0, names=names, timing=patient(4000))
    assert sorted(p.name for p in written) == [p.name for p in sessions]
    assert all((tmp_path / p.name).read_bytes() == p.read_bytes() for p in sessions)
