"""Who is let in on a shared server's socket: `access.py`'s rules applied to connections as they
arrive, so that no one without the token can keep the user out.

- Several connections are admitted at once (`Lobby`, at most ADMITTING_MAX waiting; one more
  closes the oldest of them), each within ADMIT_TIMEOUT_S: a silent or refused connection never
  holds the session, so a loop of them reconnecting cannot keep the editor out.
- The first frame is read by a thread of its own, strictly and small (`wire.read_first`, at most
  `access.MAX_FIRST_MESSAGE_BYTES`, nothing after it), so an unadmitted client costs tens of KiB,
  however long a frame it announces. An HTTP request line as the first line (a browser's request
  to 127.0.0.1) ends it at once.
- Only an admitted connection takes a session (`Lobby.take`), and at most `max_clients` hold
  one at once: one more is refused, except that a client reconnecting while an old connection's
  session still ends waits for that end (at most ENDING_GRACE_S).

It knows nothing of listening, writing or LSP sessions (`transport.py`): a connection is what
`Guest` says it offers, which `transport.Connection` is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from typing import Protocol

from spec_lsp.access import MAX_FIRST_MESSAGE_BYTES, admit, is_http_request
from spec_lsp.wire import read_first

log = logging.getLogger(__name__)

ADMIT_TIMEOUT_S = 5.0  # a connection that has not sent its initialize by then is closed
ADMITTING_MAX = 16  # connections admitted at once; one more closes the oldest of them
ENDING_GRACE_S = 10.0  # a new client waits at most this long for a closing one's session to end


class Reading(Protocol):
    """A connection's reading side, as admission reads it."""

    def readline(self, limit: int = -1, /) -> bytes: ...

    def read(self, size: int = -1, /) -> bytes: ...


class Guest(Protocol):
    """What admission reads of a connection (`transport.Connection` is one)."""

    @property
    def peer(self) -> str:
        """Who it is, for the log."""
        ...

    @property
    def reader(self) -> Reading: ...

    @property
    def closed(self) -> bool: ...

    def close(self) -> None: ...

    def ending(self) -> bool:
        """Whether the client has closed its side, told or not yet."""
        ...


class _RefuseHttp:
    """The connection's reading side, ended at once if its first line is an HTTP request."""

    def __init__(self, connection: Guest) -> None:
        self._connection = connection
        self._first = True
        self.silent = True  # nothing read yet: a connection closed at once is a probe

    def readline(self, limit: int = -1, /) -> bytes:
        line = self._connection.reader.readline(limit)
        self.silent = self.silent and not line
        if self._first and line.strip():
            self._first = False
            if is_http_request(line):
                log.warning("refused %s: an HTTP request, not LSP", self._connection.peer)
                return b""
        return line

    def read(self, size: int = -1, /) -> bytes:
        return self._connection.reader.read(size)


class Lobby:
    """Who is let in: the connections being admitted at once (oldest first), and the sessions
    (at most `max_clients`), which only admitted connections take."""

    def __init__(self, max_clients: int) -> None:
        self.max_clients = max_clients
        self.admitting: dict[Guest, None] = {}
        self.holders: set[Guest] = set()
        self.idle_since: float | None = time.monotonic()  # since when no client is served
        self._freed = asyncio.Event()

    def arrive(self, connection: Guest) -> None:
        """A new connection waits for its admission; one too many closes the oldest waiting."""
        if len(self.admitting) >= ADMITTING_MAX:
            oldest = next(iter(self.admitting))
            log.warning("refused %s: %d connections wait for admission", oldest.peer, ADMITTING_MAX)
            oldest.close()
        self.admitting[connection] = None

    def admitted(self, connection: Guest) -> None:
        self.admitting.pop(connection, None)

    async def take(self, connection: Guest) -> bool:
        """True once `connection` holds a session; False while `max_clients` are served (where
        one of them is ending, its end is waited for, at most ENDING_GRACE_S)."""
        full = len(self.holders) >= self.max_clients
        if full and any(holder.ending() for holder in self.holders):
            self._freed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._freed.wait(), ENDING_GRACE_S)
        if len(self.holders) >= self.max_clients:
            return False
        self.holders.add(connection)
        self.idle_since = None
        return True

    def leave(self, connection: Guest) -> None:
        self.holders.discard(connection)
        if not self.holders:
            self.idle_since = time.monotonic()
        self._freed.set()

    def idle_for(self) -> float:
        """Seconds since the last client left (or the server started); 0 while one is served."""
        return 0.0 if self.idle_since is None else time.monotonic() - self.idle_since


async def admit_first(connection: Guest, token: str | None) -> bytes | None:
    """The connection's first message as admitted (`access.admit`), or None: refused (logged).
    A thread of its own reads that one frame (`wire.read_first`, at most MAX_FIRST_MESSAGE_BYTES,
    nothing after it) within ADMIT_TIMEOUT_S; the session's reader takes over after it."""
    loop = asyncio.get_running_loop()
    first: asyncio.Future[bytes | None] = loop.create_future()

    def settle(body: bytes | None) -> None:
        if not first.done():
            first.set_result(body)

    stream = _RefuseHttp(connection)

    def read() -> None:
        body = None
        with contextlib.suppress(OSError, ValueError):
            body = read_first(stream, MAX_FIRST_MESSAGE_BYTES)
        with contextlib.suppress(RuntimeError):  # the loop may be gone already
            loop.call_soon_threadsafe(settle, body)

    threading.Thread(target=read, name="spec-lsp-admit", daemon=True).start()
    try:
        body = await asyncio.wait_for(first, ADMIT_TIMEOUT_S)
    except TimeoutError:
        log.warning("refused %s: no initialize within %.0f s", connection.peer, ADMIT_TIMEOUT_S)
        return None
    admitted = None if body is None else admit(body, token)
    if admitted is None and stream.silent:  # an editor asking whether a server runs here
        log.debug("%s closed without sending anything", connection.peer)
    elif admitted is None and not connection.closed:
        log.warning(
            "refused %s: the first message was not an initialize with the token", connection.peer
        )
    return admitted
