"""Malformed session files: one clear error naming the file and the line, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spec_lsp.replay.format import SessionFormatError, parse_session

HEADER = {"format": "spec-lsp-session", "version": 1, "languageId": "python", "uri": "file:///a.py"}
OPEN = {
    "t": 0,
    "msg": {
        "jsonrpc": "2.0",
        "method": "textDocument/didOpen",
        "params": {
            "textDocument": {
                "uri": "file:///a.py",
                "languageId": "python",
                "version": 1,
                "text": "",
            }
        },
    },
}
CHANGE = {
    "t": 5,
    "msg": {
        "jsonrpc": "2.0",
        "method": "textDocument/didChange",
        "params": {
            "textDocument": {"uri": "file:///a.py", "version": 2},
            "contentChanges": [
                {
                    "range": {
                        "start": {"line": 0, "character": 0},
                        "end": {"line": 0, "character": 0},
                    },
                    "text": "x",
                }
            ],
        },
    },
}
ASK = {
    "t": 9,
    "msg": {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "textDocument/inlineCompletion",
        "params": {
            "textDocument": {"uri": "file:///a.py"},
            "position": {"line": 0, "character": 1},
        },
    },
}
VALID = [HEADER, OPEN, CHANGE, ASK]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def _mutate(obj: object, path: list[str | int], value: object) -> object:
    """`obj` with the value at `path` (as far as it exists) replaced by `value`."""
    if not path or not isinstance(obj, dict | list):
        return value
    key, rest = path[0], path[1:]
    if isinstance(obj, dict) and isinstance(key, str) and key in obj:
        return {**obj, key: _mutate(obj[key], rest, value)}
    if isinstance(obj, list) and isinstance(key, int) and 0 <= key < len(obj):
        return [*obj[:key], _mutate(obj[key], rest, value), *obj[key + 1 :]]
    return value


paths = st.lists(
    st.sampled_from(
        [
            "msg",
            "params",
            "textDocument",
            "contentChanges",
            "range",
            "start",
            "line",
            "position",
            "character",
            "text",
            "uri",
            "t",
            "id",
            "jsonrpc",
            "method",
            0,
        ]
    ),
    max_size=6,
)


@settings(max_examples=400, deadline=None)
@given(which=st.integers(0, len(VALID) - 1), path=paths, value=json_values)
def test_any_mutation_of_a_valid_session_parses_or_names_its_line(
    which: int, path: list[str | int], value: object
) -> None:
    lines = [json.dumps(x) for x in VALID]
    lines[which] = json.dumps(_mutate(VALID[which], path, value))
    try:
        parse_session(lines)
    except SessionFormatError as exc:
        named = [f"line {which + 1}: "]
        if path[:1] == ["t"]:  # a later time here puts the next line back in time
            named.append(f"line {which + 2}: t goes back in time")
        assert str(exc).startswith(tuple(named)), str(exc)


BROKEN = {
    "deeply nested": (2, "[" * 100_000 + "]" * 100_000),
    "an unhashable request id": (2, json.dumps(ASK).replace('"id": 1', '"id": [1]')),
    "a NaN time": (2, json.dumps(OPEN).replace('"t": 0', '"t": NaN')),
    "a change without text": (
        3,
        json.dumps(CHANGE).replace('"text": "x"', '"txt": "x"'),
    ),
    "a request without a position": (4, json.dumps(ASK).replace('"position"', '"place"')),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_replay_of_a_malformed_session_is_one_error_naming_the_line(
    tmp_path: Path, case: str
) -> None:
    line, text = BROKEN[case]
    lines = [json.dumps(x) for x in VALID]
    lines[line - 1] = text
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n")
    proc = _replay(path)
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert f"{path}: line {line}: " in err


def test_replay_of_a_file_that_is_not_utf8_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "binary.jsonl"
    path.write_bytes(json.dumps(HEADER).encode() + b"\n\xff\xfe\x00garbage\n")
    proc = _replay(path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "not UTF-8" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def _replay(path: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "spec_lsp.commands.replay", "replay", str(path)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
