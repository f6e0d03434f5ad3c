"""Several editor windows on one shared server at once: one model pair, each client's documents,
settings and status its own (issue 42 item 2).

Real `spec-lsp serve --tcp` subprocesses with the tiny model, as in test_tcp.py: two clients
connected together, each opening the same URI with a text of its own.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz.shared_process import TOKEN, SharedServer, SocketClient

pytestmark = pytest.mark.timeout(300)
URI = "file:///same.py"


@pytest.fixture(scope="module")
def server() -> Iterator[SharedServer]:
    shared = SharedServer("tiny")
    yield shared
    shared.close()


def opened(client: SocketClient, text: str, uri: str = URI) -> None:
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    client.notify("textDocument/didOpen", {"textDocument": doc})


def inline(client: SocketClient, line: int, character: int) -> Any:
    params = {
        "textDocument": {"uri": URI},
        "position": {"line": line, "character": character},
        "context": {"triggerKind": 1},
    }
    return client.result("textDocument/inlineCompletion", params)


@pytest.fixture
def pair(server: SharedServer) -> Iterator[tuple[SocketClient, SocketClient]]:
    alice, bob = server.connect(), server.connect()
    try:
        alice.initialize()
        bob.initialize()
        assert alice.wait_loaded()["state"] == "ready"
        assert bob.wait_loaded()["state"] == "ready"
        yield alice, bob
    finally:
        alice.close()
        bob.close()


def test_two_clients_at_once_share_one_load_of_the_models(
    server: SharedServer, pair: tuple[SocketClient, SocketClient]
) -> None:
    alice, bob = pair
    assert alice.result("spec-lsp/status")["clients"] == 2
    assert server.stderr_text().count("models ready") == 1


def test_the_same_uri_in_two_clients_holds_each_ones_own_text_through_edits_and_closes(
    pair: tuple[SocketClient, SocketClient],
) -> None:
    alice, bob = pair
    opened(alice, "alice = 1\n")
    opened(bob, "bob = 2\n")
    change = {"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}}}
    alice.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": URI, "version": 2},
            "contentChanges": [{**change, "text": "alice_again = 3\n"}],
        },
    )
    assert alice.result("spec-lsp/documentText", {"uri": URI}) == {
        "version": 2,
        "text": "alice = 1\nalice_again = 3\n",
    }
    assert bob.result("spec-lsp/documentText", {"uri": URI}) == {"version": 1, "text": "bob = 2\n"}
    alice.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
    assert alice.result("spec-lsp/documentText", {"uri": URI}) is None
    assert bob.result("spec-lsp/documentText", {"uri": URI}) == {"version": 1, "text": "bob = 2\n"}


def test_each_client_is_answered_its_own_completions_and_nothing_of_the_others(
    pair: tuple[SocketClient, SocketClient],
) -> None:
    alice, bob = pair
    opened(alice, "def alice(x):\n    return ")
    opened(bob, "def bob(y):\n    return ")
    first = alice.request_async("textDocument/inlineCompletion", _params(1, 11), "a-1")
    second = bob.request_async("textDocument/inlineCompletion", _params(1, 11), "b-1")
    assert "result" in first.result(60) and "result" in second.result(60)
    assert isinstance(inline(alice, 1, 11)["items"], list)
    assert alice.strays == [] and bob.strays == []  # no answer reached the other connection


def _params(line: int, character: int) -> dict[str, Any]:
    return {
        "textDocument": {"uri": URI},
        "position": {"line": line, "character": character},
        "context": {"triggerKind": 2},
    }


def test_status_shows_each_client_its_own_documents_and_requests_beside_the_shared_model(
    pair: tuple[SocketClient, SocketClient],
) -> None:
    alice, bob = pair
    opened(alice, "a = 1\n")
    opened(alice, "b = 2\n", "file:///other.py")
    opened(bob, "c = 3\n")
    inline(alice, 0, 0)
    mine, theirs = alice.result("spec-lsp/status"), bob.result("spec-lsp/status")
    assert mine["session"]["documents"] == 2 and theirs["session"]["documents"] == 1
    assert mine["session"]["requests"] == 1 and theirs["session"]["requests"] == 0
    assert mine["session"]["client"] != theirs["session"]["client"]
    shared = ("state", "preset", "device", "target", "draft", "clients")
    assert {k: mine[k] for k in shared} == {k: theirs[k] for k in shared}


def test_settings_are_per_client_and_no_client_changes_the_model_under_another(
    pair: tuple[SocketClient, SocketClient],
) -> None:
    alice, bob = pair
    alice.notify("workspace/didChangeConfiguration", {"settings": {"specLsp": {"enabled": False}}})
    assert alice.result("spec-lsp/status")["state"] == "disabled"
    assert bob.result("spec-lsp/status")["state"] == "ready"  # its own settings
    bob.notify("workspace/didChangeConfiguration", {"settings": {"specLsp": {"preset": "bundled"}}})
    status = bob.result("spec-lsp/status")
    assert status["preset"] == "tiny" and status["state"] == "ready"
    assert any("serve 1 other editor window" in m for m in bob.messages)


def test_a_client_leaving_ends_its_own_session_and_the_other_stays_served(
    server: SharedServer,
) -> None:
    alice, bob = server.connect(), server.connect()
    try:
        alice.initialize()
        bob.initialize()
        opened(bob, "kept = 1\n")
        assert alice.end_session()  # shutdown + exit: this connection only
        assert bob.alive() and server.alive()
        assert bob.result("spec-lsp/documentText", {"uri": URI})["text"] == "kept = 1\n"
        # The server closes alice's connection before its session leaves the host's count:
        # bob sees the count drop once that end is done (waited for, never slept through).
        assert until(lambda: bob.result("spec-lsp/status")["clients"] == 1)
    finally:
        alice.close()
        bob.close()


def until(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Whether `condition` holds within `timeout` seconds, asked again every 50 ms."""
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True
    assert TOKEN not in server.stderr_text()


def test_with_idle_exit_the_server_ends_once_its_last_client_has_gone(tmp_path: Path) -> None:
    path = tmp_path / "shared.sock"
    shared = SharedServer("no-such-preset", str(path), None, ("--idle-exit", "1"))
    try:
        first, second = shared.connect(), shared.connect()
        first.initialize()
        second.initialize()
        first.close()  # the server sees the connection end when it next reads it
        assert until(lambda: second.result("spec-lsp/status")["clients"] == 1)  # still served
        second.close()
        assert shared.popen.wait(60) == 0  # bounded wait for its own end, not a timing
        assert "stopping: no client for 1 s" in shared.stderr_text()
        assert not path.exists()
    finally:
        shared.close()


def test_a_connection_closed_at_once_is_a_probe_and_logged_as_no_refusal(
    server: SharedServer,
) -> None:
    assert isinstance(server.address, tuple)
    before = server.stderr_text().count("refused")
    with socket.create_connection(server.address):
        pass  # an editor asking whether a server answers here, as the editors' shared_server do
    client = server.connect()
    try:
        client.initialize()  # served after it
        assert client.result("spec-lsp/status")["state"] == "ready"
    finally:
        client.close()
    assert server.stderr_text().count("refused") == before
