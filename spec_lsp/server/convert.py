"""Conversions between lsprotocol's types (or a custom method's plain params) and ours.

`lsp_*` turn a suggestion into the item an editor shows, and an LSP change into the service's
(range, text); `param` reads a custom notification's params, which arrive as plain objects.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from spec_lsp.completion import Suggestion
from spec_lsp.completion.editor_definitions import MAX_SENT, Sent

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


def editor_definitions(params: Any) -> tuple[str, int | None, list[Sent]] | None:
    """`spec-lsp/definitions`'s params as (document uri, version or None, the first MAX_SENT
    well-formed definitions); None when the document or the list is missing or malformed."""
    doc, items = param(params, "textDocument"), param(params, "definitions")
    uri, version = param(doc, "uri"), param(doc, "version")
    if not isinstance(uri, str) or not isinstance(items, list | tuple):
        return None
    sent: list[Sent] = []
    for item in items[:MAX_SENT]:
        name, target, text = param(item, "name"), param(item, "uri"), param(item, "text")
        line = param(param(param(item, "range"), "start"), "line")
        if isinstance(name, str) and isinstance(target, str) and isinstance(text, str):
            sent.append(Sent(name, target, line if _is_int(line) else 0, text))
    return uri, version if _is_int(version) else None, sent


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
