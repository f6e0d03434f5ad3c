"""Conversions between lsprotocol's types (or a custom method's plain params) and ours.

`lsp_*` turn a suggestion into the item an editor shows, and an LSP change into the service's
(range, text); `param` reads a custom notification's params, which arrive as plain objects.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from spec_lsp.completion import Suggestion

ACCEPT_COMMAND = "spec-lsp.didAcceptCompletion"  # the command an accepted item runs


def lsp_inline_item(suggestion: Suggestion, position: types.Position) -> types.InlineCompletionItem:
    return types.InlineCompletionItem(
        insert_text=suggestion.text,
        range=types.Range(start=position, end=position),
        command=types.Command(
            title="spec-lsp: accepted", command=ACCEPT_COMMAND, arguments=[{"id": suggestion.id}]
        ),
    )


def lsp_completion_item(suggestion: Suggestion, position: types.Position) -> types.CompletionItem:
    first_line = suggestion.text.split("\n", 1)[0].strip() or suggestion.text.strip()
    return types.CompletionItem(
        label=first_line[:80] or "…",
        kind=types.CompletionItemKind.Text,
        detail="spec-lsp",
        documentation=types.MarkupContent(kind=types.MarkupKind.PlainText, value=suggestion.text),
        text_edit=types.TextEdit(
            range=types.Range(start=position, end=position), new_text=suggestion.text
        ),
        filter_text="",
        sort_text="0",
        command=types.Command(
            title="spec-lsp: accepted", command=ACCEPT_COMMAND, arguments=[{"id": suggestion.id}]
        ),
    )


def lsp_change(
    change: types.TextDocumentContentChangeEvent,
) -> tuple[tuple[int, int, int, int] | None, str]:
    if isinstance(change, types.TextDocumentContentChangePartial):
        r = change.range
        return (r.start.line, r.start.character, r.end.line, r.end.character), change.text
    return None, change.text


def param(params: Any, key: str) -> Any:
    """`params[key]` for dict or attribute params; None when params are missing or null."""
    if params is None:
        return None
    if isinstance(params, dict):
        return params.get(key)
    return getattr(params, key, None)


def suggestion_id(params: Any) -> str | None:
    sid = param(params, "id")
    return None if sid is None else str(sid)
