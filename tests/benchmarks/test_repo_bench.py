"""`bench repo` end to end on the synthetic package (tests/benchmarks/repo_fixture.py): its LSP
rows against an oracle server that answers the text missing at the cursor (every row exact,
proving the editor's steps: files opened, edits sent only in the edits row, the answer read at
the cursor), and the whole command against the real server with the random-weight `tiny` pair,
without pass@1 (test_repo_score.py runs the package's tests; here they would only add minutes):
a smoke check, the figures are not judged, only that they exist."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from spec_lsp.benchmarks.repo import RepoRun, run_repo
from spec_lsp.replay.document import ReplayDocument
from spec_lsp.replay.framing import encode, read_frame
from tests.benchmarks.repo_fixture import REPORT_HOLES, write_package

ROOT = Path(__file__).resolve().parents[2]
ROWS = ("definitions_edits", "definitions", "definitions_only", "ring", "in_file")


def _answer(doc: ReplayDocument, position: dict[str, int], edits_ok: bool) -> str:
    """The text the file on disk has at the cursor and the document lacks; "" when the document
    is not the file with one span removed there, or edits came when they should not."""
    disk = Path(unquote(urlsplit(doc.uri).path)).read_text()
    at = doc.offset(position)
    missing = disk[at : at + len(disk) - len(doc.text)]
    whole = doc.text[:at] + missing + doc.text[at:] == disk
    return missing if whole and edits_ok else ""


def oracle_main() -> None:
    """An LSP server on stdio that answers each inline request with the hole's own text, if the
    edits it was sent fit the settings (didChange only while `editContext` is on)."""
    docs: dict[str, ReplayDocument] = {}
    settings: dict[str, Any] = {}
    changed = False
    while (frame := read_frame(sys.stdin.buffer)) is not None:
        msg = json.loads(frame[1])
        method, params = msg.get("method"), msg.get("params") or {}
        result: Any = None
        if method == "initialize":
            settings = dict(params["initializationOptions"])
            result = {"capabilities": {"positionEncoding": "utf-16"}}
        elif method == "spec-lsp/status":
            result = {"state": "ready"}
        elif method == "workspace/didChangeConfiguration":
            settings = dict(params["settings"]["specLsp"])
        elif method == "textDocument/didOpen":
            d = params["textDocument"]
            docs[d["uri"]] = ReplayDocument(d["uri"], d["languageId"], d["version"], d["text"])
        elif method == "textDocument/didChange":
            changed = True
            docs[params["textDocument"]["uri"]].apply(
                params["contentChanges"], params["textDocument"]["version"]
            )
        elif method == "textDocument/didClose":
            docs.pop(params["textDocument"]["uri"])
        elif method == "textDocument/inlineCompletion":
            edits_ok = changed == settings["editContext"] and params["context"]["triggerKind"] == 1
            text = _answer(docs[params["textDocument"]["uri"]], params["position"], edits_ok)
            result = {"items": [{"insertText": text}]}
            changed = False
        elif method == "exit":
            return
        if "id" in msg:
            sys.stdout.buffer.write(encode({"jsonrpc": "2.0", "id": msg["id"], "result": result}))
            sys.stdout.buffer.flush()


def test_every_row_is_exact_against_an_oracle_server(tmp_path: Path, monkeypatch: Any) -> None:
    from spec_lsp.benchmarks import repo

    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
    code += "from tests.benchmarks.test_repo_bench import oracle_main; oracle_main()"
    monkeypatch.setattr(repo, "default_server_cmd", lambda _preset: [sys.executable, "-c", code])
    root = write_package(tmp_path)
    plan = RepoRun(preset="oracle", rows=ROWS, holes=20, tests=False, llama_server="off")
    report = run_repo(plan, [], [root], log=sys.stderr)
    assert [p["holes"] for p in report["packages"]] == [len(REPORT_HOLES)]
    assert list(report["rows"]) == list(ROWS)
    for row, figures in report["rows"].items():
        assert figures["exact"] == len(REPORT_HOLES), row
        assert figures["edit_similarity"] == 1.0 and figures["identifier_match"] == 1.0
        assert figures["pass_at_1"] is None and figures["with_tests"] == 0
    assert report["per_package"]["mathy-1.0"]["ring"] == 1.0


def test_bench_repo_runs_with_the_tiny_pair_and_reports_every_row(tmp_path: Path) -> None:
    from spec_lsp.cli import main

    root = write_package(tmp_path)
    out = tmp_path / "repo.json"
    argv = ["bench", "repo", "--preset", "tiny", "--device", "cpu", "--source", str(root)]
    argv += ["--max-tokens", "8", "--llama-server", "off", "--json", str(out), "--no-tests"]
    assert main(argv) == 0
    report = json.loads(out.read_text())
    assert report["packages"][0]["tests_run"] is False and report["test_runs"] == 0
    assert list(report["rows"]) == list(ROWS)
    for figures in report["rows"].values():
        assert figures["holes"] == len(REPORT_HOLES) and figures["pass_at_1"] is None
        assert 0.0 <= figures["edit_similarity"] <= 1.0 and figures["latency_p50_ms"] > 0
    assert all(len(answers) == len(REPORT_HOLES) for answers in report["answers"].values())


def test_a_run_cut_short_reports_its_answers_and_the_rows_on_common_holes(
    tmp_path: Path, monkeypatch: Any
) -> None:
    from spec_lsp.benchmarks import repo
    from spec_lsp.benchmarks.repo_client import Asked

    def cut_short(_plan: Any, work: Any, scorer: Any) -> list[str]:
        ((_source, holes),) = work
        for hole in holes:
            scorer("ring", hole, Asked(hole.expected, 1.0))
        scorer("in_file", holes[0], Asked("", 1.0))
        raise KeyboardInterrupt

    monkeypatch.setattr(repo, "_server_rows", cut_short)
    plan = RepoRun(preset="none", rows=("ring", "in_file"), holes=20, tests=False)
    report = run_repo(plan, [], [write_package(tmp_path)], log=sys.stderr)
    assert report["interrupted"] is True
    assert report["rows"]["ring"]["holes"] == len(REPORT_HOLES)
    assert report["rows"]["ring"]["exact_match"] == 1.0
    shared = report["rows_on_common_holes"]
    assert shared["ring"]["holes"] == shared["in_file"]["holes"] == 1
    assert (shared["ring"]["exact"], shared["in_file"]["exact"]) == (1, 0)
    assert "on the 1 holes every row answered:" in repo.table(report)
