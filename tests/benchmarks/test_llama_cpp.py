"""llama-server as the engine bench's peer: its `timings` read into decode/prefill rates and draft
counters (from recorded responses, no server), the GGUF files behind a preset's sources, the flags a
build's `--help` offers, the build the script recorded, and the comparison line. The tests marked
`llama_server` run the real binary briefly."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spec_lsp.benchmarks import llama_cpp, peers
from spec_lsp.benchmarks.llama_cpp import PeerResult, Timings
from spec_lsp.benchmarks.prompts import BenchPrompt

# /completion's `timings` as this llama-server build returns them (tools/server/server-common.cpp),
# one with a draft model drafting and one from plain decoding.
DRAFTED: dict[str, Any] = {
    "content": "    return a + b\n",
    "tokens": [262, 470, 264, 488, 293, 198],
    "timings": {
        "cache_n": 0,
        "prompt_n": 600,
        "prompt_ms": 3000.0,
        "prompt_per_token_ms": 5.0,
        "prompt_per_second": 200.0,
        "predicted_n": 64,
        "predicted_ms": 2000.0,
        "predicted_per_token_ms": 31.25,
        "predicted_per_second": 32.0,
        "draft_n": 80,
        "draft_n_accepted": 60,
    },
}
PLAIN: dict[str, Any] = {
    "content": "x",
    "tokens": [87],
    "timings": {k: v for k, v in DRAFTED["timings"].items() if not k.startswith("draft")},
}


def test_timings_read_draft_counters_where_the_server_sent_them() -> None:
    drafted, plain = Timings.of(DRAFTED), Timings.of(PLAIN)
    assert (drafted.draft_n, drafted.draft_accepted) == (80, 60)
    assert (plain.draft_n, plain.draft_accepted) == (None, None)
    assert (plain.prompt_n, plain.prompt_ms, plain.predicted_n, plain.predicted_ms) == (
        600,
        3000.0,
        64,
        2000.0,
    )
    assert Timings.of({}).predicted_n == 0  # an answer without timings counts nothing


def test_peer_summary_splits_decode_from_prefill_and_sums_counters_over_prompts() -> None:
    spec = PeerResult(speculative=True, seconds=10.0)
    for response in (DRAFTED, DRAFTED):
        spec.add(Timings.of(response))
    s = spec.summary()
    assert s["decode_tokens_per_s"] == 32.0  # 128 tokens in 4 s of decoding
    assert s["prefill_tokens_per_s"] == 200.0  # 1200 prompt tokens in 6 s
    assert (s["drafted_tokens"], s["accepted_tokens"], s["acceptance"]) == (160, 120, 0.75)
    plain = PeerResult()
    plain.add(Timings.of(PLAIN))
    assert plain.summary()["drafted_tokens"] is None
    assert plain.summary()["acceptance"] is None
    quiet = PeerResult(speculative=True)  # speculation configured, nothing drafted
    quiet.add(Timings.of(PLAIN))
    assert (quiet.summary()["drafted_tokens"], quiet.summary()["acceptance"]) == (0, None)


class _Recorded(http.server.BaseHTTPRequestHandler):
    bodies: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 (the handler's name is http.server's)
        self.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        out = json.dumps(DRAFTED).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def recorded_server() -> Iterator[str]:
    _Recorded.bodies = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorded)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_run_peer_asks_greedy_uncached_completions_and_keeps_their_tokens(
    recorded_server: str,
) -> None:
    prompts = [BenchPrompt("a.py:1", "def f():\n"), BenchPrompt("b.py:2", "class A:\n")]
    result = llama_cpp.run_peer(recorded_server, prompts, 64, speculative=True)
    measured = _Recorded.bodies[1:]  # after one warm-up request
    assert [b["prompt"] for b in measured] == [p.text for p in prompts]
    assert all(b["temperature"] == 0 and b["cache_prompt"] is False for b in measured)
    assert result.outputs == [DRAFTED["tokens"]] * 2
    assert (result.drafted, result.accepted, result.generated) == (160, 120, 128)


def test_gguf_for_maps_each_kind_of_source_to_its_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from spec_lsp.engine.from_source import bundled_gguf
    from spec_lsp.engine.sources import fetch

    asked: list[str] = []

    def gguf_path(name: str, progress: object = None) -> Path:
        asked.append(name)
        return tmp_path / f"{name}.gguf"

    monkeypatch.setattr(fetch, "gguf_path", gguf_path)
    target, draft = peers.gguf_paths("gguf:coder-1.5b", "gguf:coder-0.5b")
    assert (target, draft) == (tmp_path / "coder-1.5b.gguf", tmp_path / "coder-0.5b.gguf")
    assert asked == ["coder-1.5b", "coder-0.5b"]
    assert peers.gguf_for("~/m/Model.Q4.GGUF") == Path.home() / "m" / "Model.Q4.GGUF"
    bundled = "bundled:smollm2-135m-instruct"
    assert peers.gguf_for(bundled) == bundled_gguf("smollm2-135m-instruct")
    for not_a_file in (None, "", "bundled-head", "Qwen/Qwen2.5-Coder-1.5B", "/models/qwen"):
        assert peers.gguf_for(not_a_file) is None


# Excerpts of `llama-server --help`: this build's spelling (which still lists the removed
# --draft-max), and an older build's.
NEW_HELP = """
--spec-draft-model, -md, --model-draft FNAME   draft model for speculative decoding
--spec-type [none|draft-simple|draft-eagle3|ngram-simple|ngram-mod|ngram-cache]
--spec-draft-n-max N     number of tokens to draft (default: 3)
--spec-draft-n-min N     minimum number of draft tokens (default: 0)
--spec-draft-threads, -td, --threads-draft N
--draft, --draft-n, --draft-max N   the argument has been removed. use --spec-draft-n-max
"""
OLD_HELP = """
-md,   --model-draft FNAME   draft model for speculative decoding (default: unused)
--draft-max, --draft, --draft-n N   number of tokens to draft (default: 16)
--draft-min, --draft-n-min N        minimum number of draft tokens (default: 0)
-td,   --threads-draft N
"""


def _with_help(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(llama_cpp, "_help", lambda _binary: text)


def test_draft_rows_use_the_flags_this_build_spells(monkeypatch: pytest.MonkeyPatch) -> None:
    binary, draft = Path("llama-server"), Path("d.gguf")
    _with_help(monkeypatch, NEW_HELP)
    rows, skipped = peers.peer_rows(binary, draft, 2)
    assert skipped == []
    flags = {r.name: r.flags for r in rows}
    assert flags["llama_cpp"] == ()
    assert flags["llama_cpp_ngram"] == ("--spec-type", "ngram-mod")
    assert flags["llama_cpp_draft"] == (
        *("--spec-draft-model", "d.gguf", "--spec-type", "draft-simple"),
        *("--spec-draft-n-max", str(peers.DRAFT_MAX), "--spec-draft-n-min", "0"),
        *("--spec-draft-threads", "2"),
    )
    _with_help(monkeypatch, OLD_HELP)
    assert peers.draft_flags(binary, draft, 2) == [
        *("--model-draft", "d.gguf", "--draft-max", str(peers.DRAFT_MAX)),
        *("--draft-min", "0", "--threads-draft", "2"),
    ]


def test_rows_this_build_cannot_run_are_skipped_with_a_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _with_help(monkeypatch, "-m FNAME  model path\n")
    rows, skipped = peers.peer_rows(Path("llama-server"), Path("d.gguf"), 2)
    assert [r.name for r in rows] == ["llama_cpp"]
    assert skipped == [
        "llama_cpp_ngram: skipped (this llama-server has no ngram-mod)",
        "llama_cpp_draft: skipped (this llama-server has no --model-draft)",
    ]
    _with_help(monkeypatch, NEW_HELP)
    _, skipped = peers.peer_rows(Path("llama-server"), None, 2)
    assert skipped == ["llama_cpp_draft: skipped (the preset's draft is not a GGUF file)"]


def test_comparison_takes_the_fastest_llama_server_row_by_decode() -> None:
    modes = {
        "target_only": {"decode_tokens_per_s": 10.0, "prefill_tokens_per_s": 100.0},
        "speculative_ngram": {"decode_tokens_per_s": 15.0},
        "speculative_both": {"decode_tokens_per_s": 18.0},
        "hf_generate": {"decode_tokens_per_s": 50.0},
        "llama_cpp": {"decode_tokens_per_s": 20.0, "prefill_tokens_per_s": 400.0},
        "llama_cpp_ngram": {"decode_tokens_per_s": 19.0},
        "llama_cpp_draft": {"decode_tokens_per_s": 24.0},
    }
    c = peers.comparison(modes)
    assert c is not None
    assert (c["best_llama_server"], c["best_engine"]) == ("llama_cpp_draft", "speculative_both")
    assert (c["decode_ratio"], c["prefill_ratio"]) == (0.75, 0.25)
    lines = peers.format_comparison(c)
    assert lines[0].endswith("speculative_both 18.0 tok/s = 0.75x")
    assert peers.comparison({"target_only": modes["target_only"]}) is None


def test_targets_that_are_not_gguf_files_get_no_llama_server_rows() -> None:
    import io

    log, modes = io.StringIO(), {"target_only": {"decode_tokens_per_s": 1.0}}
    assert peers.add_peer_modes(modes, "builtin:tiny-target", None, [], 8, 2, log) == {}
    assert list(modes) == ["target_only"]
    assert "the target builtin:tiny-target is not a GGUF file" in log.getvalue()


def test_server_binary_prefers_the_build_the_script_linked_and_reads_its_record(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("SPEC_LSP_LLAMA_SERVER", raising=False)
    monkeypatch.setenv("SPEC_LSP_TOOLS", str(tmp_path))
    root = tmp_path / "llama.cpp"
    assert llama_cpp.server_binary() is None
    for build in ("build", "build-native"):
        (root / build / "bin").mkdir(parents=True)
        (root / build / "bin" / "llama-server").write_text("#!/bin/sh\n")
        (root / build / "bin" / "llama-server").chmod(0o755)
    portable = root / "build" / "bin" / "llama-server"
    assert llama_cpp.server_binary() == portable  # a cache from before the script chose
    assert llama_cpp.server_build(portable).startswith("portable AVX2 build")
    (root / "llama-server").symlink_to(root / "build-native" / "bin" / "llama-server")
    (root / "llama-server.build").write_text("native build (-DGGML_NATIVE=ON on X)\n")
    assert llama_cpp.server_binary() == root / "llama-server"
    assert llama_cpp.server_build(root / "llama-server") == "native build (-DGGML_NATIVE=ON on X)"


def test_a_crash_on_an_unknown_instruction_is_named() -> None:
    assert llama_cpp.exit_reason(-4) == "killed by SIGILL"
    assert llama_cpp.exit_reason(1) == "exit status 1"


@pytest.mark.llama_server
def test_the_real_server_drafts_with_a_draft_gguf_and_reports_its_counters() -> None:
    from spec_lsp.engine.from_source import bundled_gguf

    binary = llama_cpp.server_binary()
    if binary is None:
        pytest.skip("no llama-server (tools/build_llama_server.sh builds one)")
    gguf = bundled_gguf("smollm2-135m-instruct")  # the target drafting for itself: all accepted
    rows, _ = peers.peer_rows(binary, gguf, 2)
    draft = next(r for r in rows if r.name == "llama_cpp_draft")
    prompt = BenchPrompt("x.py:1", "def fibonacci(n):\n    " * 8)
    with llama_cpp.running(binary, gguf, 2, list(draft.flags)) as url:
        s = llama_cpp.run_peer(url, [prompt], 16, speculative=True).summary()
    assert s["generated_tokens"] > 0 and s["decode_tokens_per_s"] > 0
    assert s["prefill_tokens_per_s"] > 0
    assert s["drafted_tokens"] > 0 and s["accepted_tokens"] > 0
