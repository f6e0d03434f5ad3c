"""An engine's streamed answer as server-sent events: its lines, read within a byte cap
(`lines`), and the JSON object each `data:` line carries (`payload`). What goes wrong is a
`RemoteError`, in words fit for the status (no key, no prompt). Knows nothing of the backends'
chunk formats (`stream.RemoteBackend.read_chunk` reads those).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, cast

import httpx

DONE = "[DONE]"  # OpenAI-compatible streams end with this payload


class RemoteError(Exception):
    """A failed remote request, described in words for the status (no key, no prompt)."""


async def lines(response: httpx.Response, limit: int) -> AsyncIterator[str]:
    """The response's lines (as `aiter_lines`, which would buffer an endless line whole), at most
    `limit` bytes in all: past it, a `RemoteError` naming the cap."""
    pending, total = b"", 0
    chunks = cast(AsyncGenerator[bytes, None], response.aiter_bytes())
    async with contextlib.aclosing(
        chunks
    ):  # an async generator: closed on return, not when collected
        async for data in chunks:
            total += len(data)
            if total > limit:
                raise RemoteError(f"the answer passed {limit} bytes (max_stream_bytes): closed")
            *complete, pending = (pending + data).split(b"\n")
            for line in complete:
                yield line.rstrip(b"\r").decode("utf-8", "replace")
    if pending:
        yield pending.rstrip(b"\r").decode("utf-8", "replace")


def payload(line: str) -> dict[str, Any] | str | None:
    """A `data:` line's JSON object, `DONE` at the end, None for any other line (comments, event
    names); an `error:` line, an `{"error": ...}` object or JSON that is no object: `RemoteError`."""
    if line.startswith("error:"):
        raise RemoteError(f"the engine reported an error: {line[6:].strip()[:200]}")
    if not line.startswith("data:"):
        return None
    text = line[5:].strip()
    if text == DONE:
        return DONE
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RemoteError(f"malformed chunk ({type(exc).__name__})") from exc
    if not isinstance(data, dict):
        raise RemoteError("malformed chunk (not an object)")
    if "error" in data:
        raise RemoteError(f"the engine reported an error: {str(data['error'])[:200]}")
    return data
