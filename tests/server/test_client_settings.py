"""What a client's settings may and may not do, against the real tiny server: `exclude` globs and
`"!id"` language entries silence files, and `trustRemoteCode` is never taken from a client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fuzz.lsp_process import ServerProcess, serve_command

pytestmark = pytest.mark.timeout(300)

TEXT = "def add(a, b):\n    return "


@pytest.fixture
def server() -> Iterator[ServerProcess]:
    proc = ServerProcess(serve_command("tiny"))
    yield proc
    if proc.alive():
        proc.process.kill()
    proc.close()


def open_doc(server: ServerProcess, uri: str, language: str) -> None:
    doc = {"uri": uri, "languageId": language, "version": 1, "text": TEXT}
    server.notify("textDocument/didOpen", {"textDocument": doc})


def items(server: ServerProcess, uri: str) -> list[object]:
    params = {
        "textDocument": {"uri": uri},
        "position": {"line": 1, "character": 11},
        "context": {"triggerKind": 1},  # Invoked: the tiny model always answers something
    }
    result = server.result("textDocument/inlineCompletion", params)
    return list(result["items"]) if result else []


def test_exclude_globs_and_left_out_languages_get_no_suggestions(server: ServerProcess) -> None:
    server.initialize(
        {
            "maxTokens": 4,
            "exclude": ["*.md", "*/secrets/*"],
            "enabledLanguages": ["*", "!rust"],
        }
    )
    assert server.wait_loaded()["state"] == "ready"
    docs = {
        "file:///w/app.py": "python",
        "file:///w/README.md": "python",  # the file name matches `*.md`, whatever the language
        "file:///w/secrets/keys.py": "python",
        "file:///w/lib.rs": "rust",
    }
    for uri, language in docs.items():
        open_doc(server, uri, language)
    got = {uri: len(items(server, uri)) for uri in docs}
    assert got["file:///w/app.py"] > 0, got
    assert [uri for uri, n in got.items() if n] == ["file:///w/app.py"], got


def test_exclude_set_later_by_configuration_applies_at_once(server: ServerProcess) -> None:
    server.initialize({"maxTokens": 4})
    server.wait_loaded()
    open_doc(server, "file:///w/notes.txt", "plaintext")
    assert items(server, "file:///w/notes.txt")
    server.notify(
        "workspace/didChangeConfiguration", {"settings": {"specLsp": {"exclude": ["*.txt"]}}}
    )
    assert items(server, "file:///w/notes.txt") == []


def test_a_client_cannot_turn_on_trust_remote_code(server: ServerProcess) -> None:
    server.initialize({"trustRemoteCode": True})
    server.wait_loaded()
    server.notify("workspace/didChangeConfiguration", {"settings": {"trustRemoteCode": True}})
    server.result("spec-lsp/status")  # the notification is handled before this answer
    refusals = [m for m in server.messages if "trustRemoteCode" in m and "ignored" in m]
    assert len(refusals) == 2 and "--trust-remote-code" in refusals[0], server.messages
