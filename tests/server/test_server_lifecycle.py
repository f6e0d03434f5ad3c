"""Start-up and exit of the real server process: options, failed loads, encodings, no orphans."""

from __future__ import annotations

import asyncio

import attrs
from lsp_helpers import (
    REQUEST_TIMEOUT_S,
    inline,
    insert,
    open_doc,
    start_session,
    stats,
    wait_ready,
)
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

EXIT_TIMEOUT_S = 30.0


async def test_shutdown_then_exit_ends_the_process_with_code_0(
    fresh_client: LanguageClient,
) -> None:
    await start_session(fresh_client, "neovim")
    open_doc(fresh_client, "file:///tmp/exit.py", "x = ")
    await inline(fresh_client, "file:///tmp/exit.py", 0, 4)
    server = fresh_client._server
    assert server is not None
    await asyncio.wait_for(fresh_client.shutdown_session(), EXIT_TIMEOUT_S)
    assert server.returncode == 0


async def test_closing_stdin_ends_the_process(fresh_client: LanguageClient) -> None:
    """An editor that dies without `exit` leaves no orphan server behind."""
    await start_session(fresh_client, "visual-studio-code")
    server = fresh_client._server
    assert server is not None and server.stdin is not None
    server.stdin.close()
    await asyncio.wait_for(server.wait(), EXIT_TIMEOUT_S)
    assert server.returncode is not None


async def test_a_failed_model_load_is_one_error_message_then_empty_results(
    fresh_client: LanguageClient,
) -> None:
    await start_session(fresh_client, "neovim", {"preset": "no-such-preset"})
    status = await wait_ready(fresh_client)
    assert status["state"] == "failed" and "no-such-preset" in status["error"]
    errors = [m for m in fresh_client.messages if m.type == types.MessageType.Error]
    assert len(errors) == 1 and "no-such-preset" in errors[0].message
    open_doc(fresh_client, "file:///tmp/failed.py", "import os\nos.")
    for _ in range(3):
        result = await inline(fresh_client, "file:///tmp/failed.py", 1, 3)
        assert result is not None and not result.items
    assert len([m for m in fresh_client.messages if m.type == types.MessageType.Error]) == 1
    await asyncio.wait_for(fresh_client.shutdown_session(), REQUEST_TIMEOUT_S)


async def test_invalid_initialization_options_warn_and_fall_back_to_defaults(
    fresh_client: LanguageClient,
) -> None:
    await start_session(fresh_client, "neovim", {"maxTokens": "many", "preset": "tiny"})
    warnings = [m for m in fresh_client.messages if m.type == types.MessageType.Warning]
    assert len(warnings) == 1 and "maxTokens" in warnings[0].message
    assert (await stats(fresh_client))["model"]["state"] == "ready"
    await asyncio.wait_for(fresh_client.shutdown_session(), REQUEST_TIMEOUT_S)


async def test_utf32_is_negotiated_when_offered_and_positions_count_code_points(
    fresh_client: LanguageClient,
) -> None:
    caps = client_capabilities("neovim")
    caps = attrs.evolve(
        caps,
        general=types.GeneralClientCapabilities(
            position_encodings=[types.PositionEncodingKind.Utf32, types.PositionEncodingKind.Utf16]
        ),
    )
    result = await fresh_client.initialize_session(types.InitializeParams(capabilities=caps))
    assert result.capabilities.position_encoding == types.PositionEncodingKind.Utf32
    await wait_ready(fresh_client)
    uri = "file:///tmp/utf32.py"
    head = 'emoji = "😀🎉"\nlabel = "日本'
    open_doc(fresh_client, uri, head)
    char = len('label = "日本')  # code points
    first = await inline(fresh_client, uri, 1, char)
    assert first is not None and first.items
    suggestion = first.items[0].insert_text
    assert isinstance(suggestion, str)
    insert(fresh_client, uri, 2, 1, char, suggestion[:1])
    again = await inline(fresh_client, uri, 1, char + 1)
    assert again is not None and [i.insert_text for i in again.items] == [suggestion[1:]]
    await asyncio.wait_for(fresh_client.shutdown_session(), REQUEST_TIMEOUT_S)
