"""Next edit's wire shapes: Copilot's params parsed, ids found where each client puts them."""

from __future__ import annotations

from spec_lsp.documents import Document
from spec_lsp.nextedit.edits import Replacement
from spec_lsp.nextedit.service import Suggested
from spec_lsp.nextedit.wire import edit_id, parse_request, to_wire
from spec_lsp.presets import load_preset


def test_a_request_needs_a_document_a_version_and_a_position() -> None:
    ok = {
        "textDocument": {"uri": "file:///a.py", "version": 3},
        "position": {"line": 1, "character": 2},
    }
    parsed = parse_request(ok)
    assert parsed is not None and (parsed.version, parsed.line, parsed.character) == (3, 1, 2)
    for bad in (
        {"textDocument": {"uri": "file:///a.py"}, "position": {"line": 1, "character": 2}},
        {
            "textDocument": {"uri": "file:///a.py", "version": True},
            "position": {"line": 1, "character": 2},
        },
        {
            "textDocument": {"uri": "file:///a.py", "version": 3},
            "position": {"line": -1, "character": 2},
        },
        {"textDocument": {"uri": 7, "version": 3}, "position": {"line": 1, "character": 2}},
        None,
    ):
        assert parse_request(bad) is None


def test_the_edit_id_is_found_in_every_shape_clients_send() -> None:
    command = {"command": "spec-lsp.didAcceptInlineEdit", "arguments": [{"id": "e4"}]}
    assert edit_id({"item": {"text": "x", "command": command}}) == "e4"
    assert edit_id({"item": {"command": command}}) == "e4"  # copilot-lsp sends only the command
    assert edit_id({"id": "e4"}) == "e4"
    assert edit_id("e4") == "e4"
    assert edit_id({"item": {}}) is None and edit_id({}) is None


def test_positions_go_out_in_the_negotiated_encoding() -> None:
    doc = Document.from_text("file:///a.py", "python", 2, 'x = "é" + width\n')
    found = Suggested("e1", doc.uri, 2, Replacement((0, 10), (0, 15), "w"))
    assert to_wire(found, doc, "utf-16")["range"]["start"] == {"line": 0, "character": 10}
    assert to_wire(found, doc, "utf-8")["range"]["start"] == {"line": 0, "character": 11}
    assert to_wire(found, doc, "utf-8")["textDocument"] == {"uri": doc.uri, "version": 2}


def test_the_shipped_presets_name_their_next_edit_format() -> None:
    assert load_preset("coder").next_edit == "qwen-chat"
    assert load_preset("sweep-next-edit-1.5b").next_edit == "sweep"
    assert load_preset("bundled").next_edit == "none"
