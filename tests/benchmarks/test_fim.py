"""`spec-lsp bench fim`: the executor judges programs right and fences them (a timeout, no
network), the answer lands at the hole over the server's range, the figures come from the rows,
and the whole bench runs through the CLI on the tiny preset (gibberish, so only the plumbing:
a row per problem with tokens and a latency)."""

from __future__ import annotations

import contextlib
import gzip
import http.server
import io
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from spec_lsp.benchmarks import fim, fim_exec, fim_problems
from spec_lsp.benchmarks.fim_exec import Row
from spec_lsp.cli import main

MINI = Path(__file__).parent / "data" / "fim-mini.jsonl"


@pytest.fixture(scope="module")
def problems() -> list[fim_problems.Problem]:
    return fim_problems.read_problems(MINI)


def _row(**kw: object) -> Row:
    base: dict[str, object] = dict(
        task_id="t",
        passed=False,
        outcome="failed",
        exact_first_line=False,
        tokens=0,
        latency_ms=0.0,
        multi_line=False,
        hole_multi_line=False,
        completion="x",
    )
    return Row(**{**base, **kw})  # type: ignore[arg-type]


def test_the_canonical_solution_passes_and_a_wrong_one_fails(
    problems: list[fim_problems.Problem],
) -> None:
    for p in problems:
        right = fim_exec.check(p, p["prompt"] + p["canonical_solution"] + p["suffix"])
        wrong = fim_exec.check(p, p["prompt"] + "    pass\n" + p["suffix"])
        assert (right.passed, wrong.passed) == (True, False), p["task_id"]
        assert wrong.reason == "failed" and wrong.detail


def test_an_infinite_loop_is_a_failed_timeout_not_a_hang() -> None:
    """It returns (a hang would not), as the timeout's outcome: the program was stopped."""
    outcome = fim_exec.run_program("while True:\n    pass\n", timeout_s=1.0)
    assert (outcome.passed, outcome.reason) == (False, "timeout")


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
    assert edit == fim.InlineEdit(
        (r.start.line, r.start.character), (r.end.line, r.end.character), str(item.insert_text)
    )


def test_an_edit_replaces_its_range_before_and_after_the_cursor() -> None:
    document = "def f():\n    retrun 1\n\nx = 2\n"
    edit = fim.InlineEdit((1, 4), (1, 10), "return")  # replaces a typo up to and past a cursor
    assert fim.apply_edit(document, edit) == "def f():\n    return 1\n\nx = 2\n"
    across = fim.InlineEdit((1, 0), (3, 1), "    pass\n\ny")
    assert fim.apply_edit(document, across) == "def f():\n    pass\n\ny = 2\n"


def test_the_answer_lands_at_the_hole(problems: list[fim_problems.Problem]) -> None:
    for p in problems:
        line, character = fim.hole(p["prompt"])
        edit = fim.inline_edit("HOLE", line, character)
        assert fim.apply_edit(fim.opened(p), edit) == p["prompt"] + "HOLE\n" + p["suffix"]
    assert fim.hole("ab\ncde") == (1, 3)
    assert fim.hole("ab\n") == (1, 0)


def test_a_one_line_answer_without_its_newline_fills_the_empty_line_of_the_hole(
    problems: list[fim_problems.Problem],
) -> None:
    """As an editor shows ghost text on an empty line: the line's text, no newline."""
    single = next(p for p in problems if not fim_exec.spans_lines(p["canonical_solution"]))
    row = fim._judge(single, single["canonical_solution"].rstrip("\n"), 5, 1.0, 10.0)
    assert row.passed and row.exact_first_line


def test_a_row_judges_the_filled_document(problems: list[fim_problems.Problem]) -> None:
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


def test_a_widened_hole_takes_the_next_lines_of_its_block_and_still_passes_its_tests() -> None:
    problem = {
        "task_id": "w",
        "prompt": "def f(xs):\n    s = 0\n",
        "entry_point": "f",
        "canonical_solution": "    for x in xs:\n",
        "suffix": "        s += x\n    return s\n\n\ndef g():\n    pass\n",
        "test": "def check(candidate):\n    assert candidate([1, 2]) == 3\n",
    }
    two = fim_problems.widen(problem, 2)
    assert two["canonical_solution"] == "    for x in xs:\n        s += x\n"
    assert two["suffix"] == "    return s\n\n\ndef g():\n    pass\n"
    three = fim_problems.widen(problem, 9)  # up to the blank line that ends the function
    assert three["canonical_solution"].endswith("        s += x\n    return s\n")
    assert three["suffix"] == "\n\ndef g():\n    pass\n"
    assert fim_problems.widen(problem, 1) == problem
    deeper = {**problem, "canonical_solution": "        s += 2\n", "suffix": "    return s\n"}
    assert fim_problems.widen(deeper, 3) == deeper  # the block ends after the hole: it cannot grow
    for grown in (two, three):
        assert fim._judge(grown, grown["canonical_solution"], 1, 0.0, 10.0).passed
        row = fim._judge(grown, "    for x in xs:\n", 1, 0.0, 10.0)
        assert row.hole_multi_line and not row.passed


def test_problems_read_alike_from_jsonl_and_gz(tmp_path: Path) -> None:
    packed = tmp_path / "mini.jsonl.gz"
    packed.write_bytes(gzip.compress(MINI.read_bytes()))
    assert fim_problems.read_problems(packed) == fim_problems.read_problems(MINI)
    assert [p["task_id"] for p in fim_problems.read_problems(packed, offset=1, limit=2)] == [
        "FimMini/1/L2",
        "FimMini/2/L3",
    ]


def test_bad_data_or_an_unknown_preset_is_one_message_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "x"}\n')
    for data in (tmp_path / "missing.jsonl.gz", bad):
        assert main(["bench", "fim", "--data", str(data), "--preset", "tiny"]) == 1
    assert main(["bench", "fim", "--data", str(MINI), "--preset", "no-such-preset"]) == 1
    err = capsys.readouterr().err
    assert "cannot read" in err and "problem 1 lacks prompt, suffix" in err
    assert "spec-lsp: unknown preset 'no-such-preset'" in err
    assert "Traceback" not in err


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


class _FakeInfill(http.server.BaseHTTPRequestHandler):
    """llama-server's `/infill` for the mini problems: the hole's text and one wrong line."""

    bodies: list[dict[str, object]] = []
    answers: dict[str, str] = {}

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append(body)
        content = self.answers[body["input_prefix"]] + "    )  # not Python\n"
        out = json.dumps({"content": content, "tokens_predicted": 9}).encode()
        self.send_response(200 if self.path == "/infill" else 404)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: object) -> None:
        pass


def test_llama_server_rows_send_the_hole_greedily_and_judge_raw_and_first_line(
    problems: list[fim_problems.Problem], monkeypatch: pytest.MonkeyPatch
) -> None:
    from spec_lsp.benchmarks import llama_cpp

    _FakeInfill.bodies = []
    _FakeInfill.answers = {p["prompt"]: p["canonical_solution"] for p in problems}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FakeInfill)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    @contextlib.contextmanager
    def running(*_args: object) -> Iterator[str]:
        yield f"http://127.0.0.1:{server.server_address[1]}"

    monkeypatch.setattr(llama_cpp, "server_binary", lambda: Path("/usr/bin/true"))
    monkeypatch.setattr(llama_cpp, "running", running)
    try:
        modes = fim._llama_rows(problems, Path("m.gguf"), 2, 16, 10.0, io.StringIO())
    finally:
        server.shutdown()
    measured = _FakeInfill.bodies[-len(problems) :]  # after one warm-up request
    for body in measured:
        sent = {k: v for k, v in body.items() if k not in ("input_prefix", "input_suffix")}
        assert sent == {"n_predict": 16, "temperature": 0, "top_k": 1, "cache_prompt": False}
    assert [(b["input_prefix"], b["input_suffix"]) for b in measured] == [
        (p["prompt"], p["suffix"]) for p in problems
    ]
    raw, first = modes["llama_server_infill"], modes["llama_server_first_line"]
    assert not any(r.passed for r in raw)  # the broken line after the hole's text
    single = [not fim_exec.spans_lines(p["canonical_solution"]) for p in problems]
    assert [r.passed for r in first] == single  # the first line alone fills a one-line hole
    assert all(r.tokens == 9 and r.exact_first_line for r in raw + first)
