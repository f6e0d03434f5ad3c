"""The first message of a shared server's connection (`access.admit`) and the HTTP check."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from spec_lsp import access
from spec_lsp.access import MAX_FIRST_MESSAGE_BYTES, admit, is_http_request
from spec_lsp.wire import read_first

TOKEN = "s3cret-token"


def initialize(options: Any) -> bytes:
    params = {"processId": None, "capabilities": {}, "initializationOptions": options}
    return json.dumps(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    ).encode()


def test_an_admitted_initialize_keeps_its_options_without_the_token() -> None:
    admitted = admit(initialize({"token": TOKEN, "maxTokens": 8}), TOKEN)
    assert admitted is not None
    message = json.loads(admitted)
    assert message["params"]["initializationOptions"] == {"maxTokens": 8}
    assert TOKEN.encode() not in admitted


@pytest.mark.parametrize(
    "body",
    [
        initialize({"token": TOKEN + "x"}),
        initialize({"token": "\ud800"}),
        initialize({"token": 12345}),
        initialize({"token": [TOKEN]}),
        initialize({"maxTokens": 8}),
        initialize(None),
        initialize(TOKEN),
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize"}).encode(),
        json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}).encode(),
        b"\xff\xfe not json",
        b"[" * 100_000 + b"]" * 100_000,
        b"null",
        b"[1, 2]",
    ],
)
def test_anything_but_an_initialize_with_the_token_is_refused(body: bytes) -> None:
    assert admit(body, TOKEN) is None


def test_a_first_message_above_its_cap_is_refused_unparsed(monkeypatch: pytest.MonkeyPatch) -> None:
    big = initialize({"token": TOKEN, "pad": "x" * MAX_FIRST_MESSAGE_BYTES})
    monkeypatch.setattr(access.json, "loads", lambda _: pytest.fail("parsed"))
    assert admit(big, TOKEN) is None
    assert admit(big, None) is None


def test_the_first_frame_is_read_small_and_alone() -> None:
    first = initialize({"token": TOKEN})
    rest = b"Content-Length: 5\r\n\r\nafter"
    stream = io.BytesIO(
        b"Content-Type: x\r\nContent-Length: %d\r\n\r\n" % len(first) + first + rest
    )
    assert read_first(stream, MAX_FIRST_MESSAGE_BYTES) == first
    assert stream.read() == rest  # nothing after it was read
    oversized = io.BytesIO(b"Content-Length: %d\r\n\r\n" % (MAX_FIRST_MESSAGE_BYTES + 1) + b"x" * 9)
    assert read_first(oversized, MAX_FIRST_MESSAGE_BYTES) is None
    assert oversized.read() == b"x" * 9  # refused unread
    for refused in (
        b"\r\nContent-Length: 2\r\n\r\n{}",  # a blank line before any length
        b"Content-Length: 0\r\n\r\n",
        b"Content-Length: 10\r\n\r\n{}",  # the stream ends inside the body
    ):
        assert read_first(io.BytesIO(refused), MAX_FIRST_MESSAGE_BYTES) is None


def test_without_a_token_the_first_message_passes_and_loses_any_token_it_carries() -> None:
    status = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "spec-lsp/status"}).encode()
    assert admit(status, None) == status
    admitted = admit(initialize({"token": "anything"}), None)
    assert admitted is not None and b"anything" not in admitted


@pytest.mark.parametrize(
    ("line", "http"),
    [
        (b"POST / HTTP/1.1\r\n", True),
        (b"GET /index.html HTTP/1.0\r\n", True),
        (b"OPTIONS * HTTP/1.1\r\n", True),
        (b"GET /\r\n", True),
        (b"PRI * HTTP/2.0\r\n", True),
        (b"Content-Length: 52\r\n", False),
        (b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n", False),
        (b'{"jsonrpc": "2.0"}\r\n', False),
    ],
)
def test_an_http_request_line_is_told_from_lsp_framing(line: bytes, http: bool) -> None:
    assert is_http_request(line) is http
