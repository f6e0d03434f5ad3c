"""`spec-lsp bench fim`: the executor judges programs right and fences them (a timeout, no
network), the answer lands at the hole over the server's range, the figures come from the rows,
and the whole bench runs through the CLI on the tiny preset (gibberish, so only the plumbing:
a row per problem with tokens and a latency)."""

from __future__ import annotations

import gzip
import json
import socket
import time
from pathlib import Path

import pytest

from spec_lsp.benchmarks import fim, fim_exec
from spec_lsp.benchmarks.fim_exec import Row
from spec_lsp.cli import main

MINI = Path(__file__).parent / "data" / "fim-mini.jsonl"


@pytest.fixture(scope="module")
def problems() -> list[fim.Problem]:
    return fim.read_problems(MINI)


def _row(**kw: object) -> Row:
    base: dict[str, object] = dict(
        task_id="t", passed=False, outcome="failed", exact_first_line=False, tokens=0,
        latency_ms=0.0, multi_line=False, hole_multi_line=False, completion="x",
    )  # fmt: skip
    return Row(**{**base, **kw})  # type: ignore[arg-type]


def test_the_canonical_solution_passes_and_a_wrong_one_fails(problems: list[fim.Problem]) -> None:
    for p in problems:
        right = fim_exec.check(p, p["prompt"] + p["canonical_solution"] + p["suffix"])
        wrong = fim_exec.check(p, p["prompt"] + "    pass\n" + p["suffix"])
        assert (right.passed, wrong.passed) == (True, False), p["task_id"]
        assert wrong.reason == "failed" and wrong.detail


def test_an_infinite_loop_is_a_failed_timeout_not_a_hang() -> None:
    start = time.monotonic()
    outcome = fim_exec.run_program("while True:\n    pass\n", timeout_s=1.0)
    assert (outcome.passed, outcome.reason) == (False, "timeout")
    assert time.monotonic() - start < 5


def _connects() -> tuple[bool, bool]:
    """Runs a program that connects to a socket listening here: (passed, connection seen)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.2)
        port = listener.getsockname()[1]
        source = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), 2).send(b'x')\n"
        outcome = fim_exec.run_program(source, timeout_s=5.0)
        try:
            listener.accept()[0].close()
            seen = True
        except TimeoutError:
            seen = False
    return outcome.passed, seen


def test_a_program_that_opens_a_socket_fails() -> None:
    assert _connects() == (False, False)


def test_the_socket_guard_alone_stops_a_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fim_exec, "unshare_prefix", lambda: ())
    assert _connects() == (False, False)


def test_the_network_namespace_alone_stops_a_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    if not fim_exec.unshare_prefix():
        pytest.skip("`unshare -rn` does not work here: the guard alone fences the network")
    monkeypatch.setattr(fim_exec, "prelude", lambda timeout_s: "")
    assert _connects() == (False, False)


def test_a_failing_program_fails_and_a_clean_one_passes() -> None:
    assert fim_exec.run_program("x = 1\n").passed
    assert not fim_exec.run_program("raise SystemExit(3)\n").passed


def test_the_bench_edit_is_the_server_inline_item_at_the_cursor() -> None:
    from lsprotocol import types

    from spec_lsp.completion import Suggestion
    from spec_lsp.server import lsp_inline_item

    item = lsp_inline_item(Suggestion("1", "    return a\n"), types.Position(3, 4))
    edit = fim.inline_edit("    return a\n", 3, 4)
    r = item.range
    assert r is not None
    assert edit == fim.Edit(
        (r.start.line, r.start.character), (r.end.line, r.end.character), str(item.insert_text)
    )


def test_an_edit_replaces_its_range_before_and_after_the_cursor() -> None:
    document = "def f():\n    retrun 1\n\nx = 2\n"
    edit = fim.Edit((1, 4), (1, 10), "return")  # replaces a typo up to and past a cursor
    assert fim.apply_edit(document, edit) == "def f():\n    return 1\n\nx = 2\n"
    across = fim.Edit((1, 0), (3, 1), "    pass\n\ny")
    assert fim.apply_edit(document, across) == "def f():\n    pass\n\ny = 2\n"


def test_the_answer_lands_at_the_hole(problems: list[fim.Problem]) -> None:
    for p in problems:
        line, character = fim.hole(p["prompt"])
        document = p["prompt"] + p["suffix"]
        edit = fim.inline_edit("HOLE", line, character)
        assert fim.apply_edit(document, edit) == p["prompt"] + "HOLE" + p["suffix"]
    assert fim.hole("ab\ncde") == (1, 3)
    assert fim.hole("ab\n") == (1, 0)


def test_a_row_judges_the_filled_document(problems: list[fim.Problem]) -> None:
    multi = next(p for p in problems if fim_exec.spans_lines(p["canonical_solution"]))
    right = fim._judge(multi, multi["canonical_solution"], 7, 12.34, 10.0)
    assert (right.passed, right.exact_first_line, right.multi_line) == (True, True, True)
    assert (right.hole_multi_line, right.tokens, right.latency_ms) == (True, 7, 12.3)
    first = multi["canonical_solution"].split("\n")[0] + "\n"
    cut = fim._judge(multi, first, 3, 1.0, 10.0)  # right first line, the rest missing
    assert (cut.passed, cut.exact_first_line, cut.multi_line) == (False, True, False)


def test_the_figures_are_computed_from_the_rows() -> None:
    rows = [
        _row(passed=True, outcome="passed", exact_first_line=True, tokens=10, latency_ms=100.0),
        _row(tokens=20, latency_ms=300.0, multi_line=True, hole_multi_line=True),
        _row(outcome="timeout", tokens=0, latency_ms=200.0, completion=""),
        _row(passed=True, outcome="passed", tokens=30, latency_ms=400.0),
    ]
    figures = fim.summarize(rows)
    assert figures == {
        "problems": 4,
        "passed": 2,
        "pass_at_1": 0.5,
        "exact_first_line": 0.25,
        "mean_tokens": 15.0,
        "latency_p50_ms": 300.0,  # nearest rank, as spec_lsp.stats.percentile
        "latency_p90_ms": 400.0,
        "timeouts": 1,
        "multi_line_suggestions": 1,
        "multi_line_holes": 1,
        "empty_suggestions": 1,
    }


def test_problems_read_alike_from_jsonl_and_gz(tmp_path: Path) -> None:
    packed = tmp_path / "mini.jsonl.gz"
    packed.write_bytes(gzip.compress(MINI.read_bytes()))
    assert fim.read_problems(packed) == fim.read_problems(MINI)
    assert [p["task_id"] for p in fim.read_problems(packed, offset=1, limit=2)] == [
        "FimMini/1/L2",
        "FimMini/2/L3",
    ]


def test_bench_fim_runs_every_problem_through_the_server_pipeline(tmp_path: Path) -> None:
    data = tmp_path / "mini.jsonl.gz"
    data.write_bytes(gzip.compress(MINI.read_bytes()))
    out = tmp_path / "fim.json"
    argv = ["bench", "fim", "--data", str(data), "--preset", "tiny", "--device", "cpu"]
    argv += ["--max-tokens", "4", "--llama-server", "off", "--json", str(out)]
    assert main(argv) == 0
    report = json.loads(out.read_text())
    rows = report["rows"]["spec_lsp"]
    expected = [json.loads(line)["task_id"] for line in MINI.read_text().splitlines()]
    assert [r["task_id"] for r in rows] == expected
    assert all(0 < r["tokens"] <= 4 and r["latency_ms"] > 0 for r in rows)
    assert report["modes"]["spec_lsp"] == fim.summarize([Row(**r) for r in rows])
    assert set(report["modes"]) == {"spec_lsp"}
    assert report["preset"] == "tiny"
