"""`spec-lsp trim` as a subprocess: one JSON line out per line in, errors reported and skipped."""

from __future__ import annotations

import json
import subprocess
import sys

LINES = [
    {
        "languageId": "python",
        "prefix": "def f(x):\n    ",
        "suffix": "\n\ndef g():\n    pass\n",
        "completion": "return x * 2\n\ndef g():\n    pass\n",
    },
    "this is not JSON",
    [1, 2, 3],
    {"languageId": "python", "prefix": "x = "},
    {"languageId": "python", "prefix": 1, "suffix": "", "completion": ""},
    {"languageId": "javascript", "prefix": "foo(", "suffix": ");\n", "completion": "   "},
    {"languageId": "no-such-language", "prefix": "say ", "suffix": "", "completion": "hi\nbye"},
    {"languageId": "rust", "prefix": "let v = vec![1", "suffix": "];", "completion": ", 2];"},
    "",
    '{"languageId": "go", "prefix": "x := \\ud800", "suffix": "", "completion": "1\\n"}',
]


def _run(stdin: bytes) -> list[dict[str, object]]:
    proc = subprocess.run(
        [sys.executable, "-m", "spec_lsp.cli", "trim"],
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    return [json.loads(line) for line in proc.stdout.decode().splitlines()]


def test_trim_cli_answers_every_line_and_survives_bad_ones() -> None:
    stdin = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in LINES)
    out = _run(stdin.encode() + b"\xff\xfe not utf-8\n")
    assert len(out) == len(LINES) + 1
    assert out[0] == {"text": "return x * 2"}
    assert set(out[1]) == {"error"}
    assert set(out[2]) == {"error"}
    assert set(out[3]) == {"error"} and "suffix" in str(out[3]["error"])
    assert set(out[4]) == {"error"}
    assert out[5] == {"text": None}
    assert out[6] == {"text": "hi\nbye"}  # no grammar, nothing to cut: kept as written
    assert out[7] == {"text": ", 2"}
    assert set(out[8]) == {"error"}
    assert out[9] == {"text": "1"}
    assert set(out[10]) == {"error"}


def test_trim_cli_with_empty_input_prints_nothing() -> None:
    assert _run(b"") == []


def test_trim_cli_errors_name_their_line_and_hostile_lines_do_not_stop_it() -> None:
    good = json.dumps(LINES[0])
    hostile = [
        "[" * 100_000 + "]" * 100_000,  # nested past the parser's recursion limit
        '{"languageId": "python", "prefix": "x", "suffix": "", "completion": '
        + "[" * 50
        + "]" * 50
        + "}",
        "\x00\x01 binary",
        '{"languageId": "python", "prefix": "'
        + "a" * 2_000_000
        + '", "suffix": "", "completion": "b"}',
        json.dumps(LINES[0]).replace("}", ', "mode": "sideways"}'),
    ]
    out = _run(("\n".join([good, *hostile, good]) + "\n").encode())
    assert len(out) == len(hostile) + 2
    assert out[0] == out[-1] == {"text": "return x * 2"}
    for number, answer in enumerate(out[1:-1], start=2):
        if "error" in answer:
            assert str(answer["error"]).startswith(f"line {number}: "), answer
    assert "error" in out[1] and "error" in out[2] and "error" in out[5]
