"""What the server exposes: where it listens, and what its logs may hold."""

from __future__ import annotations

import argparse
import os
import socket
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import spec_lsp.server
from spec_lsp.commands import serve as serve_cmd
from tests.fuzz.lsp_process import ServerProcess, serve_command
from tests.replay.builders import ROOT, fake_server_cmd, replay_cli_cmd

SECRET = "TOP_SECRET_DOCUMENT_TEXT_4711"


class FakeServer:
    tcp: tuple[str, int] | None = None  # where the shared server's socket is bound

    def start_shared(
        self, listener: socket.socket, token: str | None, idle_exit_s: float = 0.0
    ) -> None:
        FakeServer.tcp = listener.getsockname()[:2]


@pytest.fixture
def fake_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setattr(spec_lsp.server, "build_server", lambda **_: FakeServer())
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))  # where a generated token is written
    FakeServer.tcp = None
    yield
    import logging

    logging.getLogger().handlers[:] = []


def serve_args(tcp: str) -> argparse.Namespace:
    return argparse.Namespace(
        tcp=tcp,
        socket=None,
        token_file=None,
        preset="tiny",
        device="cpu",
        log_level="INFO",
        log_file=None,
        trust_remote_code=False,
        idle_exit=0.0,
    )


@pytest.mark.parametrize(
    ("tcp", "listens"),
    [("0", "127.0.0.1"), (":0", "127.0.0.1"), ("[::1]:0", "::1")],
)
def test_tcp_listens_on_loopback_unless_a_host_is_named_and_says_nothing(
    fake_server: None, capsys: pytest.CaptureFixture[str], tcp: str, listens: str
) -> None:
    assert serve_cmd.serve(serve_args(tcp)) == 0
    assert FakeServer.tcp is not None and FakeServer.tcp[0] == listens
    assert "WARNING" not in capsys.readouterr().err


def test_tcp_on_another_host_is_warned_about(
    fake_server: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert serve_cmd.serve(serve_args("0.0.0.0:0")) == 0
    assert FakeServer.tcp is not None and FakeServer.tcp[0] == "0.0.0.0"
    err = capsys.readouterr().err
    assert "WARNING" in err and "in plain text" in err


def _session_with_secrets(server: ServerProcess) -> None:
    server.initialize()
    uri = "file:///tmp/security/secret.py"
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": f"key = '{SECRET}'\n"}
    server.notify("textDocument/didOpen", {"textDocument": doc})
    bad: list[Any] = [
        {"textDocument": {"uri": uri, "version": SECRET}, "contentChanges": [{"text": SECRET}]},
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": [SECRET]}]},
        {"textDocument": {"uri": uri, "version": 3}, "contentChanges": SECRET},
    ]
    for params in bad:
        server.notify("textDocument/didChange", params)
    server.request(
        "textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "position": SECRET}
    )
    server.raw(b'Content-Length: 40\r\n\r\n{"jsonrpc": "2.0", "x": "' + SECRET.encode())
    server.raw(b"\r\n\r\n")
    # The server logs each message as it reads it, to stderr unbuffered, before it reads the next:
    # once the request after them is answered, their lines are all in the log.
    server.result("spec-lsp/status")


def test_logs_hold_no_document_text_unless_debugging() -> None:
    quiet = ServerProcess(serve_command("no-such-preset"))
    try:
        _session_with_secrets(quiet)
        log = quiet.stderr_text()
        assert "malformed" in log  # the bad messages were logged, without their contents
        assert SECRET not in log
    finally:
        quiet.close()
    debug = ServerProcess(serve_command("no-such-preset", "--log-level", "DEBUG"))
    try:
        _session_with_secrets(debug)
        assert SECRET in debug.stderr_text()  # the debug flag asks for message bodies
    finally:
        debug.close()


def test_record_writes_only_the_file_it_was_given_with_the_users_umask(tmp_path: Path) -> None:
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    out = tmp_path / "session.jsonl"
    body = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}}'
    exit_ = b'{"jsonrpc":"2.0","method":"exit"}'
    sent = b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in (body, exit_))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        replay_cli_cmd("record", "--out", str(out), "--", *fake_server_cmd()),
        input=sent,
        cwd=workdir,
        env=env,
        capture_output=True,
        timeout=60,
        preexec_fn=lambda: os.umask(0o077),
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["cwd", "session.jsonl"]
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and out.stat().st_uid == os.getuid()
