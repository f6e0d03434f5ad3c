"""Next edit on the wire, in the shape of GitHub Copilot's language server ("Next Replacement
Suggestions"): `textDocument/copilotInlineEdit` params in, `{"edits": [...]}` out, the accept
command and the ids that `textDocument/didShowInlineEdit`, `workspace/executeCommand` and
`spec-lsp/didRejectInlineEdit` carry. Plain JSON values (the server hands them to pygls as they
are): no lsprotocol type describes Copilot's methods. Positions convert between LSP units in the
negotiated encoding and the documents' characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spec_lsp.documents import Document
from spec_lsp.nextedit.service import Suggested
from spec_lsp.positions import Encoding, units_len

METHOD = "textDocument/copilotInlineEdit"
DID_SHOW = "textDocument/didShowInlineEdit"
DID_REJECT = "spec-lsp/didRejectInlineEdit"
DID_FOCUS = "textDocument/didFocus"  # Copilot's clients send it; accepted, unused
ACCEPT_COMMAND = "spec-lsp.didAcceptInlineEdit"


@dataclass(frozen=True)
class EditRequest:
    uri: str
    version: int
    line: int
    character: int


def _get(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        return value.get(key)
    return getattr(value, key, None)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def parse_request(params: Any) -> EditRequest | None:
    """The request's document, version and position; None when one is missing or malformed
    (the version is required: an edit is only ever for the version the client has)."""
    doc, position = _get(params, "textDocument"), _get(params, "position")
    uri, version = _get(doc, "uri"), _get(doc, "version")
    line, character = _get(position, "line"), _get(position, "character")
    if not isinstance(uri, str) or not isinstance(version, int) or isinstance(version, bool):
        return None
    if not (_whole(line) and _whole(character)):
        return None
    return EditRequest(uri, version, line, character)


def edit_id(params: Any) -> str | None:
    """The edit id in a didShowInlineEdit's `item` (its command's first argument), a
    didRejectInlineEdit's params or an executeCommand argument (`{"id": ...}` or the id)."""
    item = _get(params, "item")
    if item is not None:
        args = _get(_get(item, "command"), "arguments")
        return edit_id(args[0]) if isinstance(args, list) and args else None
    if isinstance(params, str):
        return params
    sid = _get(params, "id")
    return str(sid) if isinstance(sid, str | int) and not isinstance(sid, bool) else None


def _position(doc: Document, row: int, col: int, encoding: Encoding) -> dict[str, int]:
    line = doc.lines[row] if row < len(doc.lines) else ""
    return {"line": row, "character": units_len(line[:col], encoding)}


def to_wire(found: Suggested, doc: Document, encoding: Encoding) -> dict[str, Any]:
    """One InlineEdit as Copilot's clients read it (positions in `encoding`'s units)."""
    edit = found.edit
    return {
        "text": edit.text,
        "textDocument": {"uri": found.uri, "version": found.version},
        "range": {
            "start": _position(doc, *edit.start, encoding),
            "end": _position(doc, *edit.end, encoding),
        },
        "command": {
            "title": "spec-lsp: next edit accepted",
            "command": ACCEPT_COMMAND,
            "arguments": [{"id": found.id}],
        },
    }
