"""A shared server (`serve --tcp`, `--socket`): bounded framing, admission by token, many clients.

Real `spec-lsp serve` subprocesses on 127.0.0.1:0 or a Unix socket. Most tests share one server
whose preset fails at once (no model load: they are about the transport); the session tests use
the tiny model, to show that models outlive a session while everything else starts fresh.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fuzz.lsp_process import serve_command
from tests.fuzz.shared_process import TOKEN, SharedServer, frame, initialize_message

SERVER_NOT_INITIALIZED = -32002
pytestmark = pytest.mark.timeout(300)
HTTP_BODY = json.dumps(initialize_message(TOKEN)).encode()
HTTP_POST = (
    b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Content-Length: %d\r\n\r\n" % len(HTTP_BODY) + HTTP_BODY
)
BAD_FRAMES = {
    "oversized": b"Content-Length: %d\r\n\r\n{}" % 2**40,
    "too short": frame({"jsonrpc": "2.0", "method": "$/lost", "params": {"x": "y" * 40}})[:-20],
    "too long": b"Content-Length: 90\r\n\r\n" + json.dumps({"jsonrpc": "2.0"}).encode(),
    "garbage": bytes(range(256)) * 4 + b"\r\n\r\n",
    "header without body": b"Content-Length: 30\r\n\r\n",
    "deep json": b"Content-Length: 200000\r\n\r\n" + b"[" * 100_000 + b"]" * 100_000,
}
# A wrong length may take the next message with it (there is no way to tell where a body really
# ends); the one after that is read normally. This one is the loss.
SACRIFICE = frame({"jsonrpc": "2.0", "method": "$/lost", "params": {"pad": "p" * 200}})


@pytest.fixture(scope="module")
def server() -> Iterator[SharedServer]:
    """No model (its preset fails at once); logs at DEBUG, so every message body is logged."""
    shared = SharedServer("no-such-preset", extra=("--log-level", "DEBUG"))
    yield shared
    shared.close()


def test_a_client_with_the_token_is_served_and_the_token_reaches_no_log(
    server: SharedServer,
) -> None:
    client = server.connect()
    try:
        assert client.initialize()["capabilities"]["inlineCompletionProvider"] is not None
        status = client.wait_loaded()
        assert status["state"] == "failed"
        assert TOKEN not in json.dumps(status)
    finally:
        client.close()
    assert "spec-lsp/status" in server.stderr_text()  # the bodies are logged...
    assert TOKEN not in server.stderr_text()  # ...without the token


@pytest.mark.parametrize(
    "first",
    [
        frame(initialize_message(None)),
        frame(initialize_message("wrong-" + TOKEN)),
        frame(initialize_message(TOKEN[:-1])),
        frame({"jsonrpc": "2.0", "id": 1, "method": "spec-lsp/documentText", "params": {}}),
        frame({**initialize_message(TOKEN), "method": "spec-lsp/status"}),
        frame([initialize_message(TOKEN)]),
        b"Content-Length: 5\r\n\r\n{oops",
    ],
    ids=["no token", "wrong token", "short token", "documentText", "status", "batch", "bad json"],
)
def test_a_connection_without_the_token_first_gets_nothing(
    server: SharedServer, first: bytes
) -> None:
    assert server.refused(first + frame(initialize_message(TOKEN, 2))) == b""
    client = server.connect()  # and the next client is served
    try:
        client.initialize()
    finally:
        client.close()


@pytest.mark.parametrize(
    "request_", [HTTP_POST, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"OPTIONS * HTTP/1.0\r\n\r\n"]
)
def test_an_http_request_gets_nothing_even_with_the_token_inside(
    server: SharedServer, request_: bytes
) -> None:
    before = server.stderr_text().count("an HTTP request, not LSP")
    assert server.refused(request_) == b""
    assert server.stderr_text().count("an HTTP request, not LSP") == before + 1  # not a timeout


@pytest.mark.parametrize("bad", list(BAD_FRAMES.values()), ids=list(BAD_FRAMES))
def test_a_framing_error_leaves_the_client_served(server: SharedServer, bad: bytes) -> None:
    client = server.connect()
    try:
        client.initialize()
        client.raw(bad + SACRIFICE)
        assert client.result("spec-lsp/documentText", {"uri": "file:///a.py"}) is None
        assert client.alive()
    finally:
        client.close()


def test_a_connection_without_the_token_gets_nothing_while_a_client_is_served(
    server: SharedServer,
) -> None:
    first = server.connect()
    try:
        first.initialize()
        first.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": "file:///x.py",
                    "languageId": "python",
                    "version": 3,
                    "text": "x",
                }
            },
        )
        wrong = frame(initialize_message("wrong-" + TOKEN))
        for attempt in (wrong, HTTP_POST, b"garbage\r\n\r\n"):
            assert server.refused(attempt) == b""
        got = first.result("spec-lsp/documentText", {"uri": "file:///x.py"})
        assert got == {"version": 3, "text": "x"}
        assert first.alive()
    finally:
        first.close()


def test_exit_ends_the_session_and_the_next_client_starts_fresh_with_the_models_loaded() -> None:
    shared = SharedServer("tiny")
    try:
        first = shared.connect()
        first.initialize()
        assert first.wait_loaded()["state"] == "ready"
        doc = {"uri": "file:///kept.py", "languageId": "python", "version": 1, "text": "a = 1\n"}
        first.notify("textDocument/didOpen", {"textDocument": doc})
        assert first.result("spec-lsp/documentText", {"uri": doc["uri"]})["version"] == 1
        assert first.end_session()  # shutdown + exit: the server closes this connection only
        first.close()
        assert shared.alive()

        second = shared.connect()
        second.initialize()
        assert second.wait_loaded()["state"] == "ready"
        assert second.result("spec-lsp/documentText", {"uri": doc["uri"]}) is None
        again = second.request("initialize", initialize_message(None)["params"])
        assert again["error"]["code"] == -32600  # this session was initialized once, and anew
        second.close()  # dropped without shutdown: the next client is let in too

        third = shared.connect()
        third.initialize()
        assert third.wait_loaded()["state"] == "ready"
        third.close()
        assert shared.stderr_text().count("models ready") == 1  # loaded once, for all three
    finally:
        shared.close()


def test_answers_to_an_ended_session_never_reach_the_next_client() -> None:
    shared = SharedServer("no-such-preset")  # fresh: no load has run yet
    try:
        first = shared.connect()
        first.result("initialize", initialize_message(TOKEN)["params"])
        # No `initialized`: no load starts, so an explicit request waits for one.
        params = {
            "textDocument": {"uri": "file:///first.py"},
            "position": {"line": 0, "character": 0},
            "context": {"triggerKind": 1},
        }
        waiting = first.request_async("textDocument/inlineCompletion", params, "first-session")
        assert first.result("spec-lsp/status")["state"] == "loading"
        assert not waiting.done()
        first.close()
        second = shared.connect()
        second.initialize()  # its load ends the wait the first session's request was in
        assert second.wait_loaded()["state"] == "failed"
        for _ in range(3):
            second.result("spec-lsp/status")
        assert second.strays == []
        second.close()
    finally:
        shared.close()


def test_the_unix_socket_is_0600_needs_no_token_and_is_removed_at_exit(tmp_path: Path) -> None:
    path = tmp_path / "spec-lsp.sock"
    shared = SharedServer("no-such-preset", socket_path=str(path), token=None)
    try:
        assert stat.S_ISSOCK(path.lstat().st_mode)
        assert stat.S_IMODE(path.lstat().st_mode) == 0o600
        client = shared.connect()
        early = client.request("spec-lsp/documentText", {"uri": "file:///a.py"})
        assert early["error"]["code"] == SERVER_NOT_INITIALIZED  # as on stdio
        client.initialize()
        assert client.wait_loaded()["state"] == "failed"
        second = shared.connect()  # no token on a 0600 socket: any client of the user's
        second.initialize()
        assert second.result("spec-lsp/status")["clients"] == 2
        second.close()
        client.close()
    finally:
        assert shared.close() == 0
    assert not path.exists()


def test_a_stale_socket_is_replaced_and_any_other_file_is_left_alone(tmp_path: Path) -> None:
    stale = tmp_path / "stale.sock"
    with socket.socket(socket.AF_UNIX) as old:
        old.bind(str(stale))  # bound, never listening: what a killed server leaves
    SharedServer("no-such-preset", socket_path=str(stale), token=None).close()
    regular = tmp_path / "notes.txt"
    regular.write_text("keep me")
    cmd = [*serve_command("no-such-preset"), "--socket", str(regular)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "is not a socket" in done.stderr
    assert regular.read_text() == "keep me"


def test_a_live_socket_is_never_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "live.sock"
    shared = SharedServer("no-such-preset", socket_path=str(path), token=None)
    try:
        cmd = [*serve_command("no-such-preset"), "--socket", str(path)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 1 and "another server is listening there" in done.stderr
        client = shared.connect()  # the first server still owns it
        client.initialize()
        client.close()
    finally:
        shared.close()


def test_a_generated_token_is_printed_once_written_0600_and_removed_at_exit() -> None:
    shared = SharedServer("no-such-preset", token=None)
    try:
        lines = [x for x in shared.stderr_text().splitlines() if "TCP token:" in x]
        assert len(lines) == 1
        token = lines[0].rsplit(" ", 1)[1]
        assert isinstance(shared.address, tuple)
        path = Path(shared.runtime_dir) / "spec-lsp" / f"{shared.address[1]}.token"
        assert path.read_text().strip() == token
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert shared.refused(frame(initialize_message(TOKEN))) == b""  # not the env's token
        client = shared.connect(token)
        client.initialize()
        client.close()
        assert shared.stderr_text().count(token) == 1  # printed once, then never again
    finally:
        shared.close()
    assert not path.exists()


def test_a_token_file_is_read_stripped(tmp_path: Path) -> None:
    file = tmp_path / "token"
    file.write_text("  from-the-file \n")
    os.chmod(file, 0o600)
    shared = SharedServer("no-such-preset", extra=("--token-file", str(file)))
    try:
        assert shared.refused(frame(initialize_message(TOKEN))) == b""  # the file wins
        client = shared.connect("from-the-file")
        client.initialize()
        client.close()
        assert "TCP token:" not in shared.stderr_text()
    finally:
        shared.close()
    file.write_text(" \n")
    cmd = [*serve_command("no-such-preset"), "--tcp", "127.0.0.1:0", "--token-file", str(file)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "is empty" in done.stderr
