"""`spec-lsp doctor`: one line per check, a remote preset's engine probed with a short timeout,
and a non-zero exit only on a real problem (here: a preset file that does not parse)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from spec_lsp.cli import main


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def engine_url() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _remote(folder: Path, name: str, url: str) -> None:
    (folder / f"{name}.toml").write_text(
        f'target = "bundled:smollm2-135m-instruct"\n[backend]\nkind = "llama-server"\nurl = "{url}"\n'
    )


def _doctor(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, dict[str, str]]]:
    code = main(["doctor", "--json"])
    checks = json.loads(capsys.readouterr().out)
    by_message = {c["message"].split(":")[0].split(" (")[0]: c for c in checks}
    return code, by_message


def test_doctor_probes_remote_engines_and_warns_without_failing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    engine_url: str,
) -> None:
    monkeypatch.setenv("SPEC_LSP_MODELS", str(tmp_path))
    monkeypatch.setenv("SPEC_LSP_KERNELS", "torch")  # nothing to build or load here
    _remote(tmp_path, "up", engine_url)
    _remote(tmp_path, "down", f"http://127.0.0.1:{_closed_port()}")
    code, checks = _doctor(capsys)
    assert code == 0
    assert checks["up"]["level"] == "ok" and "answers (HTTP 200)" in checks["up"]["message"]
    assert checks["down"]["level"] == "warn" and "unreachable" in checks["down"]["message"]
    assert {"spec-lsp", "torch"} <= {c["area"] for c in checks.values()}
    assert any(c["area"] == "kernels" and "off here" in c["message"] for c in checks.values())


def test_doctor_fails_on_a_preset_file_that_does_not_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SPEC_LSP_MODELS", str(tmp_path))
    monkeypatch.setenv("SPEC_LSP_KERNELS", "torch")
    (tmp_path / "broken.toml").write_text("target = [\n")
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert code == 1
    assert any(line.startswith("fail") and "broken" in line for line in out.splitlines()), out
