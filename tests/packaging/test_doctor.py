"""`spec-lsp doctor`: one line per check. What the preset in use needs is warned about, the rest is
information; on a healthy install with the default preset it warns of nothing and contacts no one
(issue 42 item 5). `--all` checks every preset and probes your remote engines with a short timeout,
never a shipped example's address. A non-zero exit only on a real problem (here: a preset file
that does not parse)."""

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
        'target = "bundled:smollm2-135m-instruct"\n'
        f'[backend]\nkind = "llama-server"\nurl = "{url}"\n'
    )


def _doctor(
    capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, dict[str, dict[str, str]]]:
    code = main(["doctor", "--json", *args])
    checks = json.loads(capsys.readouterr().out)
    by_message = {c["message"].split(":")[0].split(" (")[0]: c for c in checks}
    return code, by_message


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every connection or name lookup from this process fails loudly, and is recorded."""
    tried: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        tried.append(args)
        raise AssertionError(f"doctor reached for the network: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return tried


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No presets of the user's, an empty model cache, torch's kernels."""
    (tmp_path / "models").mkdir()
    monkeypatch.setenv("SPEC_LSP_MODELS", str(tmp_path / "models"))
    monkeypatch.setenv("SPEC_LSP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPEC_LSP_KERNELS", "torch")  # nothing to build or load here
    monkeypatch.delenv("SPEC_LSP_REMOTE_URL", raising=False)
    return tmp_path / "models"


def _levels(checks: dict[str, dict[str, str]], level: str) -> list[str]:
    return [c["message"] for c in checks.values() if c["level"] == level]


def test_doctor_on_a_healthy_install_with_the_default_preset_warns_of_nothing_offline(
    fresh: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_network: list[object],
) -> None:
    """A healthy install: the default pair fetched, nothing else. The hub presets and the shipped
    remote examples are information, and no example address is looked up."""
    from spec_lsp.engine import from_source
    from spec_lsp.presets import load_preset

    coder = load_preset("coder")
    fetched = {coder.resolve(s) for s in (coder.target, coder.draft) if s}
    monkeypatch.setattr(from_source, "is_available_offline", lambda s: s in fetched)
    code, checks = _doctor(capsys)
    assert code == 0 and no_network == []
    assert _levels(checks, "warn") == []
    assert checks["coder"]["level"] == "ok" and "in use" in checks["coder"]["message"]
    examples = [c for c in checks.values() if c["area"] == "remote"]
    assert len(examples) >= 2
    assert all(c["level"] == "info" and "not contacted" in c["message"] for c in examples)
    assert checks["qwen2.5-coder-7b"]["level"] == "info"


def test_doctor_warns_when_the_preset_in_use_is_not_available_offline(
    fresh: Path, capsys: pytest.CaptureFixture[str], no_network: list[object]
) -> None:
    code, checks = _doctor(capsys)
    assert code == 0 and no_network == []
    assert _levels(checks, "warn") == [checks["coder"]["message"]]
    assert "`spec-lsp models fetch coder`" in checks["coder"]["message"]


def test_doctor_all_probes_your_remote_engines_and_never_a_shipped_example(
    fresh: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    engine_url: str,
) -> None:
    _remote(fresh, "up", engine_url)
    _remote(fresh, "down", f"http://127.0.0.1:{_closed_port()}")
    looked_up: list[object] = []
    lookup = socket.getaddrinfo

    def recording(host: object, *args: object, **kwargs: object) -> object:
        looked_up.append(host)
        return lookup(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", recording)
    code, checks = _doctor(capsys, "--all")
    assert code == 0
    assert checks["up"]["level"] == "ok" and "answers (HTTP 200)" in checks["up"]["message"]
    assert checks["down"]["level"] == "warn" and "unreachable" in checks["down"]["message"]
    assert "not contacted (a shipped example" in checks["remote-vllm-qwen2.5-coder-7b"]["message"]
    assert "vllm.internal" not in looked_up
    assert {"spec-lsp", "torch"} <= {c["area"] for c in checks.values()}
    assert any(c["area"] == "kernels" and "off here" in c["message"] for c in checks.values())


def test_doctor_leaves_your_remote_engines_alone_unless_asked(
    fresh: Path, capsys: pytest.CaptureFixture[str], no_network: list[object]
) -> None:
    _remote(fresh, "team", "http://engine.example:8080")
    code, checks = _doctor(capsys)
    assert code == 0 and no_network == []
    assert checks["team"]["level"] == "info" and "`--all` probes it" in checks["team"]["message"]


@pytest.mark.coder
def test_doctor_on_this_install_with_the_default_preset_gives_no_warning_and_no_network(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], no_network: list[object]
) -> None:
    """The real thing: `make setup` fetched the pair and built the kernels."""
    monkeypatch.delenv("SPEC_LSP_MODELS", raising=False)
    code, checks = _doctor(capsys)
    assert code == 0 and no_network == []
    assert _levels(checks, "warn") == []


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
