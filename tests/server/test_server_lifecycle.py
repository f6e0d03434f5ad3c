"""Start-up and exit of the real server process: options, failed loads, encodings, no orphans."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

import attrs
import pytest_lsp
from lsp_helpers import (
    REQUEST_TIMEOUT_S,
    delta,
    inline,
    insert,
    open_doc,
    server_command,
    start_session,
    stats,
    wait_ready,
    wait_until,
)
from lsprotocol import types
from pytest_lsp import (
    ClientServerConfig,
    LanguageClient,
    client_capabilities,
    make_test_lsp_client,
)

EXIT_TIMEOUT_S = 30.0
# Where the KV tests' servers keep KV (made by the server, removed after each test).
KV_FOLDER = Path(tempfile.gettempdir()) / f"spec-lsp-kv-test-{os.getpid()}"
KV_ENV = {**os.environ, "SPEC_LSP_KV_DISK": str(KV_FOLDER)}
# The request fills the whole window, and nothing after it prefills another prompt.
KV_OPTIONS = {"shortWindow": 0, "prefetch": False}
FUNCTIONS = "".join(f"def f{i}(a, b):\n    return a * {i} + b\n\n" for i in range(120))


@pytest_lsp.fixture(config=ClientServerConfig(server_command("tiny"), server_env=KV_ENV))
async def kv_client(lsp_client: LanguageClient):
    """A server of its own whose KV goes on disk, in KV_FOLDER (empty at the start)."""
    yield
    await _ended(lsp_client)
    shutil.rmtree(KV_FOLDER, ignore_errors=True)


async def _ended(client: LanguageClient) -> None:
    server = client._server
    if server is not None and server.returncode is None:  # the test failed before exiting
        server.kill()
        await asyncio.wait_for(server.wait(), REQUEST_TIMEOUT_S)


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


async def test_shutdown_keeps_the_open_documents_kv_on_disk(kv_client: LanguageClient) -> None:
    """An editor quits with a file open: its window's KV is on disk when the server has gone (a
    request's prefill alone saves none: nothing was on disk before the shutdown)."""
    await start_session(kv_client, "neovim", KV_OPTIONS)
    await wait_ready(kv_client)
    uri, text = "file:///tmp/kept.py", FUNCTIONS[: FUNCTIONS.index("def f40(")]
    open_doc(kv_client, uri, text + "x = ")
    await inline(kv_client, uri, text.count("\n"), 4)
    assert not _kept()
    await asyncio.wait_for(kv_client.shutdown_session(), EXIT_TIMEOUT_S)
    assert _kept()


def _kept() -> list[Path]:
    return list(KV_FOLDER.glob("*.kv"))


async def _type_then_leave(client: LanguageClient, uri: str, text: str, row: int) -> str:
    """A request at `row` of `text`, two lines typed there and a request after them (the
    window's start kept, the cursor down): the document's text after it."""
    open_doc(client, uri, text)
    await inline(client, uri, row, 0)
    typed = "x0 = f0(1, 2)\nx1 = f1(1, 2)\n"
    insert(client, uri, 2, row, 0, typed)
    await inline(client, uri, row + 2, 0)
    final = text.split("\n")
    final[row:row] = typed.rstrip("\n").split("\n")
    return "\n".join(final)


async def test_a_file_reopened_where_typing_left_it_takes_its_window_from_disk(
    kv_client: LanguageClient,
) -> None:
    """Typing moved the cursor down from where the file's window start was chosen; closed and
    reopened, the file's window starts where it did, so the first request restores the KV kept
    at the close (a start chosen afresh at that cursor would match none of it)."""
    await start_session(kv_client, "neovim", KV_OPTIONS)
    await wait_ready(kv_client)
    uri, row = "file:///tmp/reopened.py", 240  # a function's first line, deep in the file
    final = await _type_then_leave(kv_client, uri, FUNCTIONS, row)
    kv_client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )

    async def saved() -> bool:
        return bool(_kept())

    await wait_until(saved)
    open_doc(kv_client, uri, final, version=3)
    before = (await stats(kv_client))["kvReuse"]
    await inline(kv_client, uri, row + 3, 0)  # a line on: no answer of before fits it
    after = (await stats(kv_client))["kvReuse"]
    assert delta(before, after, "promptTokens") > 0  # it was generated
    assert delta(before, after, "restoredTokens") >= 256  # a whole block, from disk
    assert delta(before, after, "reusedTokens") >= 256  # and reused
    await asyncio.wait_for(kv_client.shutdown_session(), EXIT_TIMEOUT_S)


async def test_a_restarted_server_starts_a_files_window_where_the_last_one_did(
    kv_client: LanguageClient,
) -> None:
    """The editor restarts the server with a file open where typing moved the cursor down:
    the new server starts the file's window where the old one did (the starts kept beside the
    KV), so its first request restores the KV the old one kept at its shutdown."""
    await start_session(kv_client, "neovim", KV_OPTIONS)
    await wait_ready(kv_client)
    uri, row = "file:///tmp/restarted.py", 240
    final = await _type_then_leave(kv_client, uri, FUNCTIONS, row)
    await asyncio.wait_for(kv_client.shutdown_session(), EXIT_TIMEOUT_S)
    assert _kept()
    again = make_test_lsp_client()
    await again.start_io(*server_command("tiny"), env=KV_ENV)
    try:
        await start_session(again, "neovim", KV_OPTIONS)
        await wait_ready(again)
        open_doc(again, uri, final, version=3)
        await inline(again, uri, row + 3, 0)
        reuse = (await stats(again))["kvReuse"]
        assert reuse["restoredTokens"] >= 256 and reuse["reusedTokens"] >= 256
        await asyncio.wait_for(again.shutdown_session(), EXIT_TIMEOUT_S)
    finally:
        await _ended(again)
