"""Helpers for driving the real `spec-lsp serve` process with pytest-lsp."""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
from typing import Any

from lsprotocol import types
from pygls.protocol import JsonRPCProtocol
from pytest_lsp import LanguageClient, client_capabilities

CLIENTS = ("neovim@v0.10.0", "visual-studio-code")
READY_TIMEOUT_S = 120.0
REQUEST_TIMEOUT_S = 60.0


def server_command(preset: str) -> list[str]:
    return [sys.executable, "-m", "spec_lsp.cli", "serve", "--preset", preset]


def accept_registrations(client: LanguageClient) -> list[types.Registration]:
    """Answers `client/registerCapability` as the editor whose capabilities the client declares
    does (VS Code registers the file watcher the server asks for), keeping the registrations;
    a handler the test registered itself stays."""
    kept: list[types.Registration] = getattr(client, "registrations", [])
    if types.CLIENT_REGISTER_CAPABILITY not in client.protocol.fm.features:

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def on_register(params: types.RegistrationParams) -> None:
            kept.extend(params.registrations)

        client.registrations = kept  # type: ignore[attr-defined]
    return kept


async def start_session(
    client: LanguageClient, spec: str, options: dict[str, Any] | None = None
) -> types.InitializeResult:
    caps = client_capabilities(spec)
    accept_registrations(client)
    result = await client.initialize_session(
        types.InitializeParams(capabilities=caps, initialization_options=options or {})
    )
    client.init_result = result  # type: ignore[attr-defined]
    await wait_ready(client)
    return result


async def request(client: LanguageClient, method: str, params: Any = None) -> Any:
    return await asyncio.wait_for(
        client.protocol.send_request_async(method, params), REQUEST_TIMEOUT_S
    )


async def wait_ready(client: LanguageClient, timeout: float = READY_TIMEOUT_S) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        status = _plain(await request(client, "spec-lsp/status"))
        if status["state"] != "loading":
            return status
        if loop.time() > deadline:
            raise TimeoutError(f"model still loading after {timeout} s")
        await asyncio.sleep(0.1)


async def stats(client: LanguageClient) -> dict[str, Any]:
    return _plain(await request(client, "spec-lsp/stats"))


def _plain(value: Any) -> Any:
    """pygls hands custom results back as attribute objects; turn them into dicts."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return {k: _plain(v) for k, v in vars(value).items()}
    return value


def open_doc(
    client: LanguageClient, uri: str, text: str, language_id: str = "python", version: int = 1
) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id=language_id, version=version, text=text
            )
        )
    )


def insert(client: LanguageClient, uri: str, version: int, line: int, char: int, text: str) -> None:
    pos = types.Position(line=line, character=char)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=pos, end=pos), text=text
                )
            ],
        )
    )


def inline_params(uri: str, line: int, char: int) -> types.InlineCompletionParams:
    return types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=char),
        context=types.InlineCompletionContext(
            trigger_kind=types.InlineCompletionTriggerKind.Automatic
        ),
    )


async def inline(
    client: LanguageClient, uri: str, line: int, char: int
) -> types.InlineCompletionList | None:
    result = await asyncio.wait_for(
        client.text_document_inline_completion_async(inline_params(uri, line, char)),
        REQUEST_TIMEOUT_S,
    )
    assert result is None or isinstance(result, types.InlineCompletionList)
    return result


def send_now(client: LanguageClient, method: str, params: Any, msg_id: str | None = None) -> Any:
    """Writes a request at once and returns the future of its response.

    pytest-lsp's own `send_request_async` is a coroutine that writes only when its task first
    runs; tests about ordering (a request between two keystrokes) need the write to happen here.
    """
    return JsonRPCProtocol.send_request_async(client.protocol, method, params, msg_id)


NO_PARAMS = object()  # send_raw(..., NO_PARAMS): a message without a "params" key


def send_raw(client: LanguageClient, method: str, params: Any, msg_id: str | None = None) -> Any:
    """Writes a message whose params need not type-check (for malformed input tests)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not NO_PARAMS:
        message["params"] = params
    future: Any = None
    if msg_id is not None:
        message["id"] = msg_id
        future = concurrent.futures.Future()
        client.protocol._request_futures[msg_id] = future
    client.protocol._send_data(message)
    return None if future is None else asyncio.wrap_future(future)


def configure(client: LanguageClient, settings: dict[str, Any]) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"specLsp": settings})
    )


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def end_of(text: str) -> tuple[int, int]:
    """The (line, UTF-16 character) at the end of `text`."""
    lines = text.split("\n")
    return len(lines) - 1, utf16_len(lines[-1])


def doc_uri(name: str) -> str:
    return f"file:///tmp/spec-lsp-tests/{name}"


async def wait_until(
    predicate: Any, timeout: float = REQUEST_TIMEOUT_S, step: float = 0.05
) -> None:
    """Polls an async predicate until it holds (bounded)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await predicate():
        if loop.time() > deadline:
            raise TimeoutError("condition not reached")
        await asyncio.sleep(step)


def delta(before: dict[str, Any], after: dict[str, Any], key: str) -> int:
    return int(after[key]) - int(before[key])
