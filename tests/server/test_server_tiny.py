"""End-to-end: the real `spec-lsp serve --preset tiny` process, with Neovim's and VS Code's
client capabilities. Tiny's suggestions are gibberish; the tests are about the protocol and the
scheduling, asserted on the results and on `spec-lsp/stats`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsp_helpers import (
    NO_PARAMS,
    _plain,
    configure,
    delta,
    doc_uri,
    end_of,
    inline,
    inline_params,
    insert,
    open_doc,
    request,
    send_now,
    send_raw,
    stats,
    utf16_len,
    wait_until,
)
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcInvalidParams,
    JsonRpcMethodNotFound,
    JsonRpcRequestCancelled,
)
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")
INLINE = types.TEXT_DOCUMENT_INLINE_COMPLETION


async def running(client: LanguageClient) -> bool:
    return (await stats(client))["running"] >= 1


async def first_suggestion(client: LanguageClient, uri: str, text: str) -> tuple[str, int, int]:
    line, char = end_of(text)
    result = await inline(client, uri, line, char)
    assert result is not None and result.items, "the tiny model suggests something here"
    insert_text = result.items[0].insert_text
    assert isinstance(insert_text, str)
    return insert_text, line, char


async def test_initialize_advertises_inline_completion_incremental_sync_and_accept_command(
    client: LanguageClient,
) -> None:
    caps = client.init_result.capabilities  # type: ignore[attr-defined]
    assert caps.inline_completion_provider is not None
    assert caps.completion_provider is not None
    sync = caps.text_document_sync
    assert isinstance(sync, types.TextDocumentSyncOptions)
    assert sync.change == types.TextDocumentSyncKind.Incremental
    assert caps.execute_command_provider is not None
    assert "spec-lsp.didAcceptCompletion" in caps.execute_command_provider.commands
    assert caps.position_encoding == types.PositionEncodingKind.Utf16


async def test_model_loading_reported_progress_from_begin_to_end(client: LanguageClient) -> None:
    # The status says ready as soon as the worker is; the End report follows on the server's
    # loop a moment later (seconds on a loaded machine), so wait for it rather than race it.
    def reports() -> list[object]:
        return [r for rs in client.progress_reports.values() for r in rs]

    for _ in range(300):
        if reports() and isinstance(reports()[-1], types.WorkDoneProgressEnd):
            break
        await asyncio.sleep(0.1)
    assert isinstance(reports()[0], types.WorkDoneProgressBegin)
    assert isinstance(reports()[-1], types.WorkDoneProgressEnd)
    # Each step with its share of the whole, never going back, and the seconds since the start.
    steps = [r for r in reports() if isinstance(r, types.WorkDoneProgressReport)]
    percentages = [r.percentage for r in steps]
    assert steps and percentages == sorted(percentages) and percentages[-1] == 100
    assert all(r.message and r.message.endswith(" s)") for r in steps)


async def test_inline_completion_inserts_at_the_cursor_with_an_accept_command(
    client: LanguageClient,
) -> None:
    uri = doc_uri("answer.py")
    text = "import os\n\ndef main():\n    x = os."
    open_doc(client, uri, text)
    line, char = end_of(text)
    result = await inline(client, uri, line, char)
    assert result is not None and len(result.items) == 1
    item = result.items[0]
    at = types.Position(line=line, character=char)
    assert item.range == types.Range(start=at, end=at)
    assert isinstance(item.insert_text, str) and item.insert_text
    assert item.command is not None and item.command.command == "spec-lsp.didAcceptCompletion"
    suggestion_id = item.command.arguments[0]["id"]  # type: ignore[index]
    before = await stats(client)
    client.protocol.notify("spec-lsp/didShowCompletion", {"id": suggestion_id})
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=item.command.command, arguments=item.command.arguments)
    )
    after = await stats(client)
    assert delta(before, after, "shown") == 1
    assert delta(before, after, "accepted") == 1
    assert delta(before, after, "acceptedChars") == len(item.insert_text)


async def test_a_resting_cursor_warms_its_prompt_and_bad_ones_are_ignored(
    client: LanguageClient,
) -> None:
    uri = doc_uri("cursor.py")
    text = "".join(f"item_{i} = compute({i})\n" for i in range(300))
    open_doc(client, uri, text)
    before = (await stats(client))["warmUp"]["started"]
    for params in (
        {"textDocument": {"uri": uri, "version": 99}, "position": {"line": 250, "character": 0}},
        {"textDocument": {"uri": uri}, "position": {"line": 9999, "character": 0}},
        {"textDocument": {"uri": uri}, "position": {"line": "x", "character": 0}},
        {"textDocument": {}, "position": {"line": 1, "character": 0}},
    ):
        client.protocol.notify("spec-lsp/didMoveCursor", params)
    assert (await stats(client))["warmUp"]["started"] == before  # none fits: nothing warmed
    resting = {
        "textDocument": {"uri": uri, "version": 1},
        "position": {"line": 250, "character": 4},
    }

    async def warmed() -> bool:  # sent again while another test's generation may still run
        client.protocol.notify("spec-lsp/didMoveCursor", resting)
        return bool((await stats(client))["warmUp"]["started"] > before)

    await wait_until(warmed)
    result = await inline(client, uri, 250, 4)  # the request there still answers
    assert result is not None


async def test_completion_fallback_returns_one_item_with_the_suggestion(
    client: LanguageClient,
) -> None:
    uri = doc_uri("fallback.py")
    text = "def add(a, b):\n    return "
    open_doc(client, uri, text)
    line, char = end_of(text)
    result = await asyncio.wait_for(
        client.text_document_completion_async(
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=char),
            )
        ),
        60,
    )
    assert isinstance(result, types.CompletionList)
    assert len(result.items) == 1
    edit = result.items[0].text_edit
    assert isinstance(edit, types.TextEdit) and edit.new_text


async def test_burst_of_20_keystrokes_runs_the_model_only_for_the_last(
    client: LanguageClient,
) -> None:
    uri = doc_uri("burst.py")
    open_doc(client, uri, "")
    configure(client, {"debounceMs": 3000})
    try:
        before = await stats(client)
        typed = "value = compute(x, y)"[:20]
        tasks = []
        for i, ch in enumerate(typed):
            insert(client, uri, i + 2, 0, i, ch)
            tasks.append(send_now(client, INLINE, inline_params(uri, 0, i + 1)))
        results = await asyncio.wait_for(asyncio.gather(*tasks), 60)
        after = await stats(client)
    finally:
        configure(client, {"debounceMs": 0})
    assert delta(before, after, "requests") == 20
    assert delta(before, after, "generated") == 1
    assert delta(before, after, "cancelled") == 19
    for result in results[:-1]:
        assert result is not None and not result.items


async def test_cancel_request_stops_the_generation_and_the_server_answers_afterwards(
    client: LanguageClient,
) -> None:
    uri = doc_uri("cancel.py")
    text = "def main():\n    print("
    open_doc(client, uri, text)
    configure(client, {"maxTokens": 400})
    try:
        before = await stats(client)
        line, char = end_of(text)
        msg_id = f"cancel-me-{id(client)}"
        pending = send_now(client, INLINE, inline_params(uri, line, char), msg_id)
        await wait_until(lambda: running(client))
        client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
        with pytest.raises(JsonRpcRequestCancelled):
            await asyncio.wait_for(pending, 60)
        await wait_until(lambda: _not(running(client)))
        after = await stats(client)
    finally:
        configure(client, {"maxTokens": 64})
    assert delta(before, after, "cancelled") == 1
    assert after["latencyMs"]["stop"]["n"] - before["latencyMs"]["stop"]["n"] == 1
    assert after["generatedTokens"] - before["generatedTokens"] < 400
    status = await request(client, "spec-lsp/status")
    assert status["state"] == "ready" if isinstance(status, dict) else status.state == "ready"


async def _not(awaitable: Any) -> bool:
    return not await awaitable


async def test_typing_through_a_suggestion_answers_the_rest_without_a_model_call(
    client: LanguageClient,
) -> None:
    uri = doc_uri("through.py")
    text = "def add(a, b):\n    return "
    open_doc(client, uri, text)
    suggestion, line, char = await first_suggestion(client, uri, text)
    typed = suggestion[:2]
    assert "\n" not in typed
    before = await stats(client)
    insert(client, uri, 2, line, char, typed)
    result = await inline(client, uri, line, char + utf16_len(typed))
    after = await stats(client)
    assert result is not None and [i.insert_text for i in result.items] == [suggestion[2:]]
    assert delta(before, after, "typedThrough") == 1
    assert delta(before, after, "generated") == 0


async def test_a_suggestion_for_an_outdated_document_version_is_not_shown(
    client: LanguageClient,
) -> None:
    uri = doc_uri("stale.py")
    text = "def main():\n    total = "
    open_doc(client, uri, text)
    configure(client, {"maxTokens": 400})
    try:
        before = await stats(client)
        line, char = end_of(text)
        pending = asyncio.ensure_future(inline(client, uri, line, char))
        await wait_until(lambda: running(client))
        insert(client, uri, 2, 0, 0, "# edited above\n")  # not typing through: a new version
        result = await pending
        after = await stats(client)
    finally:
        configure(client, {"maxTokens": 64})
    assert result is not None and not result.items
    assert delta(before, after, "answered") == 0
    assert delta(before, after, "cancelled") + delta(before, after, "stale") == 1


async def test_utf16_positions_around_emoji_and_cjk_round_trip(client: LanguageClient) -> None:
    uri = doc_uri("unicode.py")
    text = 'greeting = "héllo 😀 日本語 🎉"\nname = "'
    open_doc(client, uri, text)
    insert(client, uri, 2, 0, utf16_len('greeting = "héllo 😀 日本語 🎉'), "✨")
    line = 1
    prefix = 'name = "🙂'
    insert(client, uri, 3, 1, utf16_len('name = "'), "🙂")
    char = utf16_len(prefix)
    result = await inline(client, uri, line, char)
    assert result is not None and result.items
    at = types.Position(line=line, character=char)
    assert result.items[0].range == types.Range(start=at, end=at)
    suggestion = result.items[0].insert_text
    assert isinstance(suggestion, str)
    typed = suggestion[:1]
    before = await stats(client)
    insert(client, uri, 4, line, char, typed)
    again = await inline(client, uri, line, char + utf16_len(typed))
    after = await stats(client)
    assert again is not None and [i.insert_text for i in again.items] == [suggestion[1:]]
    assert delta(before, after, "typedThrough") == 1


async def test_did_change_configuration_disables_and_reports_invalid_values(
    client: LanguageClient,
) -> None:
    uri = doc_uri("config.py")
    text = "import sys\nprint(sys."
    open_doc(client, uri, text)
    line, char = end_of(text)
    configure(client, {"enabled": False})
    try:
        status = await request(client, "spec-lsp/status")
        assert _get(status, "state") == "disabled"
        result = await inline(client, uri, line, char)
        assert result is not None and not result.items
    finally:
        configure(client, {"enabled": True})
    assert _get(await request(client, "spec-lsp/status"), "state") == "ready"
    shown = len(client.messages)
    configure(client, {"maxTokens": -3, "temperature": "hot"})
    await wait_until(lambda: _has_messages(client, shown + 2))
    new = client.messages[shown:]
    assert all(m.type == types.MessageType.Warning for m in new)
    assert any("maxTokens" in m.message for m in new)
    assert any("temperature" in m.message for m in new)
    result = await inline(client, uri, line, char)  # defaults in force, still serving
    assert result is not None


async def _has_messages(client: LanguageClient, n: int) -> bool:
    return len(client.messages) >= n


def _get(obj: Any, key: str) -> Any:
    return obj[key] if isinstance(obj, dict) else getattr(obj, key)


async def test_unknown_documents_and_out_of_range_positions_answer_empty(
    client: LanguageClient,
) -> None:
    missing = await inline(client, doc_uri("never-opened.py"), 0, 0)
    assert missing is not None and not missing.items
    uri = doc_uri("range.py")
    open_doc(client, uri, "x = 1\n")
    beyond = await inline(client, uri, 999, 0)
    assert beyond is not None and not beyond.items


async def test_malformed_params_and_unknown_methods_get_errors_and_the_server_stays_up(
    client: LanguageClient,
) -> None:
    bad = send_raw(client, INLINE, {"textDocument": 5}, msg_id=f"bad-{id(client)}")
    with pytest.raises(JsonRpcInvalidParams):
        await asyncio.wait_for(bad, 60)
    with pytest.raises(JsonRpcMethodNotFound):
        await request(client, "spec-lsp/noSuchMethod", {})
    send_raw(client, types.TEXT_DOCUMENT_DID_CHANGE, {"textDocument": {"uri": 3}})
    assert _get(await request(client, "spec-lsp/status"), "state") == "ready"


@pytest.mark.parametrize("params", [NO_PARAMS, None], ids=["missing", "null"])
async def test_custom_methods_accept_missing_or_null_params(
    client: LanguageClient, params: Any
) -> None:
    tag = f"{id(client)}-{params is None}"
    status = _plain(
        await asyncio.wait_for(send_raw(client, "spec-lsp/status", params, f"st-{tag}"), 60)
    )
    assert status["state"] == "ready"
    got = _plain(
        await asyncio.wait_for(send_raw(client, "spec-lsp/stats", params, f"sx-{tag}"), 60)
    )
    assert got["model"]["state"] == "ready" and isinstance(got["requests"], int)
    before = await stats(client)
    for method in (
        "spec-lsp/didShowCompletion",
        "spec-lsp/didAcceptCompletion",
        "spec-lsp/didPartiallyAcceptCompletion",
        "spec-lsp/didMoveCursor",
    ):
        send_raw(client, method, params)
    after = await stats(client)  # answered after the notifications: they were handled, no crash
    assert after["shown"] == before["shown"] and after["accepted"] == before["accepted"]
