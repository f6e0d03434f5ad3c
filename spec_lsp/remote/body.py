"""How every body a remote engine sends is read: within a byte cap and a total deadline.

The engine may be hostile (docs/security.md), and httpx reads a whole body into memory unless
told otherwise (`aread()`, `.text`, `.json()`), with timeouts per read, not in total: a 400 MB
error body, a 200 MB `/metrics` page or a warm-up's endless JSON would each cost hundreds of MB,
and a body dripped a byte at a time would hold its thread for ever. So every request is streamed,
and its body is read here, chunk by chunk, against a `Cap`: past its bytes or its seconds the
read stops with a `RemoteError` naming the cap, and leaving the request's `with` block closes the
connection unread. An error's body is only read for the start that the status shows (`detail`).
`sse.lines` reads a streamed answer's events through `achunks` too.

The deadline is checked as each chunk arrives, so a read ends at most one read timeout past it.
It knows nothing of the backends' formats.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from dataclasses import dataclass
from typing import cast

import httpx

from spec_lsp.remote.sse import RemoteError

DETAIL_BYTES = 4096  # of an error's body, only the start is read (the status shows 200 characters)
DETAIL_S = 5.0


@dataclass(frozen=True)
class Cap:
    """At most `size` bytes, read within `seconds` (always the preset's `max_stream_s`); `name`
    is what the error past `size` names."""

    size: int
    seconds: float
    name: str = "max_stream_bytes"


class _Budget:
    def __init__(self, cap: Cap) -> None:
        self.cap, self.total = cap, 0
        self.end = time.monotonic() + cap.seconds

    def spend(self, data: bytes) -> None:
        self.total += len(data)
        if self.total > self.cap.size:
            raise RemoteError(f"the answer passed {self.cap.size} bytes ({self.cap.name}): closed")
        if time.monotonic() > self.end:
            seconds = self.cap.seconds
            raise RemoteError(
                f"the answer was still coming after {seconds:g} s (max_stream_s): closed"
            )


def chunks(response: httpx.Response, cap: Cap) -> Iterator[bytes]:
    """A streamed response's body as it arrives, within `cap` (else a `RemoteError`)."""
    budget = _Budget(cap)
    for data in response.iter_bytes():
        budget.spend(data)
        yield data


async def achunks(response: httpx.Response, cap: Cap) -> AsyncIterator[bytes]:
    """`chunks` of an async streamed response."""
    budget = _Budget(cap)
    # An async generator: closed on return, not when collected.
    arriving = cast(AsyncGenerator[bytes, None], response.aiter_bytes())
    async with contextlib.aclosing(arriving):
        async for data in arriving:
            budget.spend(data)
            yield data


def read(response: httpx.Response, cap: Cap) -> bytes:
    """A streamed response's whole body, within `cap` (else a `RemoteError`)."""
    return b"".join(chunks(response, cap))


def detail(response: httpx.Response) -> str:
    """The start of an error's body, for the status; whatever is read of it in DETAIL_S."""
    got = b""
    with contextlib.suppress(RemoteError, httpx.HTTPError):
        for data in chunks(response, Cap(1 << 62, DETAIL_S)):
            got += data
            if len(got) >= DETAIL_BYTES:
                break
    return _text(got)


async def adetail(response: httpx.Response) -> str:
    """`detail` of an async streamed response."""
    got = b""
    with contextlib.suppress(RemoteError, httpx.HTTPError):
        arriving = cast(AsyncGenerator[bytes, None], achunks(response, Cap(1 << 62, DETAIL_S)))
        async with contextlib.aclosing(arriving):
            async for data in arriving:
                got += data
                if len(got) >= DETAIL_BYTES:
                    break
    return _text(got)


def _text(data: bytes) -> str:
    return data[:200].decode("utf-8", "replace").strip()
