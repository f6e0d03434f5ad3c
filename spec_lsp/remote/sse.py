"""An engine's streamed answer as server-sent events: its lines (`lines`, of a body read within
its cap by `body.achunks`), and the JSON object each `data:` line carries (`payload`). What goes
wrong is a `RemoteError`, in words fit for the status (no key, no prompt). Knows nothing of the
backends' chunk formats (`stream.RemoteBackend.read_chunk` reads those).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

DONE = "[DONE]"  # OpenAI-compatible streams end with this payload


class RemoteError(Exception):
    """A failed remote request, described in words for the status (no key, no prompt)."""


async def lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """The lines of a streamed answer's body (as `aiter_lines`, which would buffer an endless line
    whole); `chunks` is the body read within its cap (`body.achunks`), which bounds a line too."""
    pending = b""
    async for data in chunks:
        *complete, pending = (pending + data).split(b"\n")
        for line in complete:
            yield line.rstrip(b"\r").decode("utf-8", "replace")
    if pending:
        yield pending.rstrip(b"\r").decode("utf-8", "replace")


def payload(line: str) -> dict[str, Any] | str | None:
    """A `data:` line's JSON object, `DONE` at the end, None for any other line (comments, event
    names); an `error:` line, an `{"error": ...}` object or JSON that is no object:
    `RemoteError`."""
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
