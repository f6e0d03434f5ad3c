"""The server's reading side of LSP base-protocol framing: bounded and resynchronizing.

Owns turning a byte stream from the client into message bodies. pygls' own loop matches
`Content-Length: N\\r\\n` only as a whole line and reads N bytes in one allocation, so two things a
client can send break it: a length near the memory size (one huge allocation, then a crash), and a
body shorter or longer than its header said (the rest of the body is glued to every later header
line, none of which matches again: the server goes deaf). Here a header is found anywhere in a
line, a length above `MAX_MESSAGE_BYTES` is refused without reading it, and lines are read in
bounded pieces; after any framing error the next well-formed frame is read normally. The same
reader serves stdin (`serve_stream`) and each client of a shared server (`transport.py`, `relay`),
whose first frame, sent before its token is checked, is read strictly and small (`read_first`).

It knows nothing of JSON-RPC or pygls: bodies go to a callback as bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
import threading
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # a 10 MB document, JSON-escaped, fits with room to spare
MAX_LINE_BYTES = 64 * 1024  # header lines are read in pieces of at most this many bytes
QUEUED_MESSAGES = 8  # bodies read ahead of the event loop (backpressure on a flooding client)
_HEADER = re.compile(rb"Content-Length:[ \t]*(\d{1,20})[ \t]*\r?\n?$", re.IGNORECASE)


class Readable(Protocol):
    """What the reader needs of a stream: stdin's buffer, a socket's file, or a wrapper."""

    def readline(self, limit: int = -1, /) -> bytes: ...

    def read(self, size: int = -1, /) -> bytes: ...


def read_frames(
    stream: Readable, on_body: Callable[[bytes], None], max_bytes: int = MAX_MESSAGE_BYTES
) -> None:
    """Calls `on_body(body)` for each frame read from `stream`, until the stream ends."""
    length: int | None = None
    while True:
        line = stream.readline(MAX_LINE_BYTES)
        if not line:
            return
        if line.strip():
            match = _HEADER.search(line)
            if match:  # the last Content-Length seen before the blank line wins
                length = int(match.group(1))
            continue
        if length is None:
            continue  # a blank line outside a header
        size, length = length, None
        if size == 0 or size > max_bytes:
            log.error("refused a message of %d bytes (at most %d)", size, max_bytes)
            continue
        body = stream.read(size)
        if len(body) < size:
            return  # the stream ended inside a body
        on_body(body)


def read_first(stream: Readable, max_bytes: int) -> bytes | None:
    """The first frame of a stream not yet trusted (a shared server's connection before its
    token is checked): header lines, a blank line, then a body of at most `max_bytes`, read in
    one piece. None, with nothing more read, for anything else: a blank line before any
    `Content-Length`, a larger length, or the stream's end. Nothing past this frame is read, so
    the resynchronizing reader (`read_frames`, `relay`) takes over at the next one."""
    length: int | None = None
    while line := stream.readline(MAX_LINE_BYTES):
        if line.strip():
            if match := _HEADER.search(line):
                length = int(match.group(1))
            continue
        if length is None or not 0 < length <= max_bytes:
            return None
        body = stream.read(length)
        return body if len(body) == length else None
    return None


async def relay(stream: Readable, handle: Callable[[bytes], None], name: str) -> None:
    """Runs `handle(body)` on the running loop for each frame of `stream`, in order, until the
    stream ends. A daemon thread (`name`) reads, so a read blocked on stdin or a socket never
    holds up the process's end; at most QUEUED_MESSAGES bodies wait for the loop (a flooding
    client blocks). After each body the loop runs once more before the next, so a handler's task
    takes its first step (e.g. a configuration change applied) before the next message is handled.
    """
    loop = asyncio.get_running_loop()
    bodies: asyncio.Queue[bytes | None] = asyncio.Queue()
    slots = threading.Semaphore(QUEUED_MESSAGES)

    def post(body: bytes | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop may be gone already
            loop.call_soon_threadsafe(bodies.put_nowait, body)

    def queue(body: bytes) -> None:
        slots.acquire()
        post(body)

    def pump() -> None:
        try:
            read_frames(stream, queue)
        except (OSError, ValueError) as exc:
            log.error("reading the client's stream failed: %s", exc)
        finally:
            post(None)

    threading.Thread(target=pump, name=name, daemon=True).start()
    while (body := await bodies.get()) is not None:
        slots.release()
        handle(body)
        await asyncio.sleep(0)


async def serve_stream(stream: Readable, handle: Callable[[bytes], None]) -> None:
    """`relay` of stdin until its end or SIGTERM."""
    loop = asyncio.get_running_loop()
    term = loop.create_future()
    with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
        loop.add_signal_handler(signal.SIGTERM, term.set_result, None)
    reading = asyncio.ensure_future(relay(stream, handle, "spec-lsp-stdin"))
    try:
        await asyncio.wait({reading, term}, return_when=asyncio.FIRST_COMPLETED)
        log.info("stopping: %s", "end of input" if reading.done() else "SIGTERM")
        if reading.done():
            reading.result()  # a handler's SystemExit (`exit`) or error goes on to the caller
    finally:
        reading.cancel()
