"""`bench next-edit`'s scoring on hand-made answers, its runner against an oracle LSP server
(answers each case's expected edit: every figure must come out perfect), and the whole command
against the real server with the deterministic fake rewriter (tests/nextedit/fake_rewriter.py)
on a tiny repository whose commit renames an identifier across lines."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from spec_lsp.benchmarks import next_edit as ne
from spec_lsp.benchmarks.next_edit_cases import Case, after_history, apply, mine
from spec_lsp.replay.document import Edit, ReplayDocument, position_of
from spec_lsp.replay.framing import encode, read_frame

ROOT = Path(__file__).resolve().parents[2]
BASE = "def f(a):\n    return a + 1\n"


def inline_edit(text: str, start: int, end: int, new: str, version: int = 3) -> dict[str, Any]:
    return {
        "text": new,
        "textDocument": {"uri": "file:///x.py", "version": version},
        "range": {"start": position_of(text, start), "end": position_of(text, end)},
        "command": {"title": "t", "command": "spec-lsp.didAcceptInlineEdit", "arguments": [{}]},
    }


def case_of(expected: Edit | None, text: str = BASE) -> Case:
    return Case("c", "0" * 40, "x.py", "python", text, (), len(text), expected)


def test_apply_inline_edit_counts_utf16_units() -> None:
    text = "s = '😀'\nt = 1\n"
    edit = inline_edit(text, text.index("1"), text.index("1") + 1, "2")
    assert edit["range"]["start"] == {"line": 1, "character": 4}
    assert ne.apply_inline_edit(text, edit) == "s = '😀'\nt = 2\n"
    after_emoji = text.index("'", 5) + 1
    edit = inline_edit(text, after_emoji, after_emoji, "!")
    assert edit["range"]["start"]["character"] == 8  # 7 characters: the emoji is 2 units
    assert ne.apply_inline_edit(text, edit) == "s = '😀'!\nt = 1\n"


def test_edit_similarity_is_one_for_the_same_edit_zero_for_none_and_between_otherwise() -> None:
    want = BASE.replace("a + 1", "a + 2")
    assert ne.edit_similarity(BASE, want, want) == 1.0
    assert ne.edit_similarity(BASE, BASE, want) == 0.0
    partial = ne.edit_similarity(BASE, BASE.replace("a + 1", "a + 22"), want)
    assert 0.5 < partial < 1.0
    # edits apart score nothing: "a" -> "b" and "1" -> "2" have " + " between them
    assert ne.edit_similarity(BASE, BASE.replace("a + 1", "b + 1"), want) == 0.0
    # overlapping: the region "a + 1" on both sides, "b + 3" vs "a + 2"
    assert ne.edit_similarity(BASE, BASE.replace("a + 1", "b + 3"), want) == pytest.approx(0.6)
    deleted = BASE.replace("    return a + 1\n", "")
    assert ne.edit_similarity(BASE, deleted, deleted) == 1.0


def test_score_exact_partial_stale_and_negative_rows() -> None:
    start = BASE.index("1")
    expected = Edit(start, 1, "2")
    right = {"edits": [inline_edit(BASE, start, start + 1, "2")]}
    row = ne.score(case_of(expected), BASE, right, 3)
    assert row["exact"] and row["similarity"] == 1.0 and row["suggested"] and not row["stale"]
    assert row["expected"]["range"]["start"] == {"line": 1, "character": 15}
    wrong = {"edits": [inline_edit(BASE, start, start + 1, "3")]}
    row = ne.score(case_of(expected), BASE, wrong, 3)
    assert not row["exact"] and 0.0 <= row["similarity"] < 1.0
    row = ne.score(case_of(expected), BASE, right, 4)  # computed for another version
    assert row["stale"] and not row["suggested"] and row["similarity"] == 0.0
    assert ne.score(case_of(None), BASE, {"edits": []}, 3)["quiet"]
    no_op = {"edits": [inline_edit(BASE, start, start + 1, "1")]}
    assert ne.score(case_of(None), BASE, no_op, 3)["quiet"]  # changes nothing
    assert not ne.score(case_of(None), BASE, right, 3)["quiet"]


def test_figures_from_rows_and_stats() -> None:
    def row(positive: bool, ok: bool, ms: float) -> dict[str, Any]:
        base = {"positive": positive, "stale": False, "suggested": ok, "latency_ms": ms}
        if positive:
            return base | {"exact": ok, "similarity": 1.0 if ok else 0.0}
        return base | {"quiet": not ok}

    rows = [row(True, True, 10), row(True, False, 20), row(False, False, 30), row(False, True, 40)]
    stats = {
        "nextEdit": {"decode": {"tokensPerPass": 3.5, "tokensPerS": 70.0, "targetForwards": 8}}
    }
    f = ne.figures(rows, stats)
    assert (f["positives"], f["negatives"], f["exact_matches"], f["quiet_negatives"]) == (
        2,
        2,
        1,
        1,
    )
    assert (
        f["exact_match"] == 0.5 and f["edit_similarity"] == 0.5 and f["quiet_on_negatives"] == 0.5
    )
    assert f["latency_ms"] == {"p50": 25.0, "p90": 37.0, "n": 4}
    assert f["latency_ms_suggested"] == {"p50": 25.0, "p90": 37.0, "n": 2}  # 10 and 40 ms
    assert (f["tokens_per_pass"], f["decode_tokens_per_s"]) == (3.5, 70.0)
    assert ne.figures([], None)["tokens_per_pass"] is None
    no_pass = {"nextEdit": {"decode": {"tokensPerPass": 0.0, "targetForwards": 0}}}
    assert ne.figures(rows, no_pass)["tokens_per_pass"] is None  # a backend that counts none


def test_the_gate_curve_shows_only_answers_at_or_over_each_confidence() -> None:
    def row(positive: bool, confidence: float | None, exact: bool = False) -> dict[str, Any]:
        base = {"positive": positive, "suggested": True, "confidence": confidence}
        return base | ({"exact": exact} if positive else {})

    rows = [row(True, 0.95, True), row(True, 0.55), row(True, None), row(False, 0.65)]
    rows.append({"positive": False, "suggested": False, "confidence": 0.99})
    curve = {g["gate"]: g for g in ne.gate_curve(rows)}
    assert curve[0.5] == {
        "gate": 0.5,
        "suggested_on_positives": 1.0,
        "exact_matches": 1,
        "quiet_on_negatives": 0.5,
    }
    assert curve[0.7]["suggested_on_positives"] == 2 / 3  # 0.55 gated; None (kept) passes
    assert curve[0.7]["quiet_on_negatives"] == 1.0
    assert curve[0.95]["exact_matches"] == 1 and curve[0.9]["exact_matches"] == 1
    assert ne.gate_curve([])[0]["suggested_on_positives"] is None


def test_the_timed_requests_cost_is_the_difference_of_the_servers_counters() -> None:
    before = {"cpuMs": 100.0, "decode": {"prefilledTokens": 900, "prefillMs": 50.0}}
    decode = {"prefilledTokens": 1040, "prefillMs": 80.0}
    after = {"cpuMs": 350.5, "confidence": 0.8, "decode": decode}
    assert ne._spent(before, after) == {
        "prefilled_tokens": 140,
        "prefill_ms": 30.0,
        "cpu_ms": 250.5,
        "confidence": 0.8,
    }
    assert ne._spent({}, {})["prefilled_tokens"] == 0  # a server that counted nothing yet


def oracle_main(answers_path: str) -> None:
    """An LSP server on stdio that answers each uri's expected edit when the document is the
    case's text after its history (anything else: no edit)."""
    answers = json.loads(Path(answers_path).read_text())
    docs: dict[str, ReplayDocument] = {}
    while (frame := read_frame(sys.stdin.buffer)) is not None:
        msg = json.loads(frame[1])
        method, params = msg.get("method"), msg.get("params") or {}
        result: Any = None
        if method == "initialize":
            result = {"capabilities": {"positionEncoding": "utf-16"}}
        elif method == "spec-lsp/status":
            result = {"state": "ready"}
        elif method == "spec-lsp/stats":
            result = {
                "nextEdit": {
                    "decode": {"tokensPerPass": 4.0, "tokensPerS": 80.0, "targetForwards": 5}
                }
            }
        elif method == "textDocument/didOpen":
            d = params["textDocument"]
            docs[d["uri"]] = ReplayDocument(d["uri"], d["languageId"], d["version"], d["text"])
        elif method == "textDocument/didChange":
            doc = docs[params["textDocument"]["uri"]]
            doc.apply(params["contentChanges"], params["textDocument"]["version"])
        elif method == "exit":
            return
        elif method == ne.METHOD:
            doc = docs[params["textDocument"]["uri"]]
            want = answers.get(doc.uri)
            ok = (
                want
                and want["after"] == doc.text
                and params["textDocument"]["version"] == doc.version
            )
            edit = want and dict(
                want["edit"], textDocument={"uri": doc.uri, "version": doc.version}
            )
            result = {"edits": [edit] if ok else []}
        if "id" in msg:
            sys.stdout.buffer.write(encode({"jsonrpc": "2.0", "id": msg["id"], "result": result}))
            sys.stdout.buffer.flush()


def _answers(cases: list[Case]) -> dict[str, Any]:
    out = {}
    for n, case in enumerate(cases, start=1):
        if case.expected is not None:
            after = after_history(case)
            e = case.expected
            rng = {
                "start": position_of(after, e.start),
                "end": position_of(after, e.start + e.old_len),
            }
            out[f"file:///bench/{n}/{quote(case.path)}"] = {
                "after": after,
                "edit": {"range": rng, "text": e.text},
            }
    return out


def test_the_runner_against_an_oracle_scores_every_case_perfect(tmp_path: Path) -> None:
    cases = mine(ROOT, limit=12, negatives=4) if (ROOT / ".git").exists() else []
    if len(cases) < 16:
        pytest.skip("needs this repository's git history")
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(_answers(cases)))
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
    code += (
        "from tests.benchmarks.test_next_edit_bench import oracle_main; oracle_main(sys.argv[1])"
    )
    cmd = [sys.executable, "-c", code, str(answers)]
    lines: list[str] = []
    with tempfile.TemporaryFile() as log:
        run = asyncio.run(ne.run_cases(cases, cmd, {}, log, lines.append))
    f = ne.figures(run["rows"], run["stats"])
    assert (f["positives"], f["negatives"]) == (12, 4)
    assert (
        f["exact_match"] == 1.0 and f["edit_similarity"] == 1.0 and f["quiet_on_negatives"] == 1.0
    )
    assert f["tokens_per_pass"] == 4.0 and f["latency_ms"]["n"] == 16
    assert len(lines) == 16 and lines[0].startswith("case 1/16 ")
    for case, row in zip(cases, run["rows"], strict=True):
        if case.expected is not None:
            assert ne.apply_inline_edit(after_history(case), row["predicted"]) == apply(
                after_history(case), case.expected
            )


RENAME_BEFORE = """def area(width, height):
    # the area
    return width * height


def perimeter(width, height):
    # the perimeter
    return 2 * (width + height)
"""
LONG_BEFORE = "alpha = 1\n" + "".join(f"value_{i} = {i}\n" for i in range(60))


def _git(repo: Path, *args: str) -> None:
    flags = ["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", *flags, *args], cwd=repo, check=True, capture_output=True)


def test_bench_next_edit_with_the_fake_rewriter_renames_and_reports_every_figure(
    tmp_path: Path,
) -> None:
    fake_rewriter = pytest.importorskip("tests.nextedit.fake_rewriter")
    from spec_lsp.cli import main

    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "shapes.py").write_text(RENAME_BEFORE)
    (repo / "long.py").write_text(LONG_BEFORE)
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "shapes")
    (repo / "shapes.py").write_text(RENAME_BEFORE.replace("width", "w"))
    (repo / "long.py").write_text(LONG_BEFORE.replace("alpha", "beta"))
    _git(repo, "commit", "-q", "-am", "rename width to w, alpha to beta")
    fake = fake_rewriter.FakeRewriter()
    try:
        preset = fake.write_preset(tmp_path)
        out = tmp_path / "next-edit.json"
        argv = ["bench", "next-edit", "--repo", str(repo), "--preset", str(preset)]
        argv += ["--device", "cpu", "--json", str(out), "--compare", "target-only"]
        assert main(argv) == 0
    finally:
        fake.stop()
    report = json.loads(out.read_text())
    assert report["cases"] == {"positive": 3, "negative": 1}
    assert [r["label"] for r in report["runs"]] == ["spec", "target-only"]
    assert "decode_speed_ratio" in report
    for run in report["runs"]:
        f = run["figures"]
        assert f["exact_matches"] > 0 and f["quiet_on_negatives"] == 1.0
        for key in ("edit_similarity", "suggested_on_positives", "latency_ms_suggested"):
            assert f[key] is not None, key
        assert f["latency_ms"]["p50"] is not None and f["latency_ms"]["p90"] is not None
        assert "tokens_per_pass" in f and "decode_tokens_per_s" in f
        assert f["prefilled_tokens"]["p50"] is not None and f["cpu_ms"]["p50"] is not None
        assert [g["gate"] for g in f["gate"]] == list(ne.GATES)
        assert all("prefilled_tokens" in r and "cpu_ms" in r for r in run["rows"])
        assert len(run["rows"]) == 4


def test_a_run_cut_short_keeps_the_cases_it_finished(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C (or SIGTERM, which the command maps to it) after the first case: the run reports
    that case, its figures, and says it was interrupted."""
    cases = [case_of(Edit(0, 0, "x")), case_of(None), case_of(None)]
    row = ne.score(cases[0], BASE, {"edits": []}, 1) | {"latency_ms": 5.0}

    async def first_then_interrupt(
        cases: list[Case],
        cmd: list[str],
        init: dict[str, Any],
        log: Any,
        progress: Any,
        rows: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        assert rows is not None
        rows.append(row)
        raise KeyboardInterrupt

    monkeypatch.setattr(ne, "run_cases", first_then_interrupt)
    run = ne._run(cases, ["unused"], {}, "spec")
    assert run["interrupted"] and run["rows"] == [row]
    assert run["figures"]["positives"] == 1 and run["figures"]["latency_ms"]["n"] == 1
    assert run["figures"]["tokens_per_pass"] is None  # no server stats for a cut run
    assert "[spec] interrupted after 1 of 3 cases" in capsys.readouterr().err


def test_every_kth_case_of_the_set_mined_at_the_named_commit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("needs this repository's git history")
    mined: list[str] = []
    cases = [case_of(Edit(0, 0, "x")) if n % 2 else case_of(None) for n in range(7)]

    def fake_mine(repo: str, limit: int, negatives: int, rev: str = "HEAD") -> list[Case]:
        mined.append(rev)
        return cases

    def fake_run(run_cases: list[Case], cmd: list[str], init: dict[str, Any], label: str) -> Any:
        return {"label": label, "figures": ne.figures([], None), "rows": [], "interrupted": False}

    monkeypatch.setattr(ne, "mine", fake_mine)
    monkeypatch.setattr(ne, "_run", fake_run)
    out = tmp_path / "r.json"
    parent = ["git", "rev-parse", "--verify", "-q", "HEAD~1"]  # a shallow clone has no parent
    rev = (
        "HEAD~1"
        if subprocess.run(parent, cwd=ROOT, capture_output=True).returncode == 0
        else "HEAD"
    )
    assert ne.main(str(ROOT), "coder", 5, 2, str(out), rev=rev, every=3) == 0
    report = json.loads(out.read_text())
    head = subprocess.run(
        ["git", "rev-parse", rev], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert mined == [head] and report["head"] == head and report["rev"] == rev
    assert report["cases"] == {"positive": 1, "negative": 2}  # cases 0, 3 and 6
