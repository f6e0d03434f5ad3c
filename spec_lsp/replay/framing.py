"""LSP base-protocol framing (`Content-Length` headers) over byte streams, sync and async.

Frames are returned with their raw bytes as well as the parsed body, so the recording proxy can
forward exactly what it read.
"""

from __future__ import annotations

import asyncio
import json
from typing import IO, Any


class FramingError(ValueError):
    pass


def encode(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _content_length(header: bytes) -> int:
    for line in header.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return int(value.strip())
            except ValueError:
                break
    raise FramingError(f"no valid Content-Length in header {header!r}")


def read_frame(stream: IO[bytes]) -> tuple[bytes, bytes] | None:
    """Reads one frame; returns (raw bytes of the whole frame, body) or None at end of stream."""
    header = b""
    while not header.endswith(b"\r\n\r\n"):
        line = stream.readline()
        if not line:
            if header.strip():
                raise FramingError("stream ended inside a header")
            return None
        header += line
    length = _content_length(header)
    body = b""
    while len(body) < length:
        chunk = stream.read(length - len(body))
        if not chunk:
            raise FramingError("stream ended inside a body")
        body += chunk
    return header + body, body


async def read_frame_async(stream: asyncio.StreamReader) -> bytes | None:
    """Reads one frame's body; None at end of stream."""
    try:
        header = await stream.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise FramingError("stream ended inside a header") from None
        return None
    try:
        return await stream.readexactly(_content_length(header))
    except asyncio.IncompleteReadError:
        raise FramingError("stream ended inside a body") from None
