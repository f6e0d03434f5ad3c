"""A shared server's transport: several clients at once on a TCP or Unix socket, admitted by token.

`spec-lsp serve --tcp` and `--socket` serve several editor windows from one process (one model in
memory), each connection a session of its own. This module owns the sockets and who may speak on
them:

- Listening: TCP (port 0 binds a free port) or a Unix socket created 0600 (a stale socket file is
  replaced, anything else at the path is an error), removed at exit with the token file.
- Clients: every admitted connection is served at once, up to a cap (`serve_clients`'
  `max_clients`; one more is refused); when one closes, its session ends and the others go on
  (the server keeps running; with `idle_exit_s`, until no client has been served that long).
- Admission (`admission.py`, on `access.py`'s rules): several connections at once, each within
  a few seconds; the first message must be `initialize` with the token (where one is required),
  a small frame read strictly; anything else is closed without a reply. After it, every frame is
  read by `wire.py`'s bounded, resynchronizing reader, as on stdin.

It knows nothing of LSP beyond the first message: the server (`SpecServer`, the `Sessions` it is)
turns an admitted connection into a session, which is ended when the connection closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from spec_lsp.admission import Lobby, admit_first
from spec_lsp.wire import relay

log = logging.getLogger(__name__)

SEND_TIMEOUT_S = 30.0  # a client that stops reading for this long is disconnected


class TransportError(Exception):
    """A setting or a path that keeps a shared server from starting; the message says why."""


class OpenSession(Protocol):
    """One admitted connection's LSP session."""

    def handle(self, body: bytes) -> None:
        """Handles one message body the client sent."""
        ...

    def close(self) -> None:
        """Ends the session: its connection closed (its documents, its requests go)."""
        ...


class Sessions(Protocol):
    """What the server does with an admitted connection."""

    def open_session(self, connection: Connection) -> OpenSession:
        """A fresh LSP session writing to `connection`."""
        ...


# -- listening ----------------------------------------------------------------------------------
@dataclass
class Listener:
    sock: socket.socket
    address: str  # HOST:PORT as bound, or the socket's path
    port: int | None = None  # the bound TCP port
    remove_at_close: list[Path] = field(default_factory=list)

    def close(self) -> None:
        self.sock.close()
        for path in self.remove_at_close:
            with contextlib.suppress(OSError):
                path.unlink()


def listen_tcp(host: str, port: int) -> Listener:
    """Binds HOST:PORT (port 0: a free one, the bound one is in `address`)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.create_server((host, port), family=family)
    except OSError as exc:
        raise TransportError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    return Listener(sock, f"{shown}:{bound}", bound)


def listen_unix(path: str) -> Listener:
    """Binds a Unix socket at `path`, created 0600; a stale socket there is replaced, a live one
    (a server answering) or any other file is an error. The path is made absolute first: the
    server leaves its working directory afterwards, and removes the socket at exit."""
    where = Path(path).absolute()
    path = str(where)
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISSOCK(where.lstat().st_mode):
            raise TransportError(f"{path} exists and is not a socket; not replacing it")
        if _answers(where):
            raise TransportError(f"{path}: another server is listening there")
        where.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # the socket file is created 0600, never briefly wider
    try:
        sock.bind(path)
    except OSError as exc:
        sock.close()
        raise TransportError(f"cannot listen on {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen()
    return Listener(sock, path, remove_at_close=[where])


def _answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
        return True


# -- one connection -----------------------------------------------------------------------------
class Connection:
    """A client's socket: its reading side for `wire.relay`, its writing side for the protocol
    (pygls' writer: `write(bytes)`, `close()`). Writes after the close are dropped, so a request
    of an ended session never reaches the next client."""

    def __init__(self, sock: socket.socket, peer: str) -> None:
        sock.setblocking(True)
        if sock.family in (socket.AF_INET, socket.AF_INET6):  # each write is a whole message
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with contextlib.suppress(OSError):  # a client that stops reading cannot hold the loop
            sock.setsockopt(
                socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", int(SEND_TIMEOUT_S), 0)
            )
        self.sock, self.peer = sock, peer
        self.reader = sock.makefile("rb")
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            self.sock.sendall(data)
        except OSError as exc:
            log.warning("writing to %s failed (%s); closing the connection", self.peer, exc)
            self.close()

    def ending(self) -> bool:
        """Whether the client has closed its side (or we ours), even if the reading thread has
        not told the loop yet: the end of a stream stays readable, so a peek finds it."""
        if self.closed:
            return True
        try:
            return self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def close(self) -> None:
        """Ends the connection; the reading thread sees its end."""
        if not self.closed:
            self.closed = True
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)

    def release(self) -> None:
        self.close()
        with contextlib.suppress(OSError):
            self.reader.close()
            self.sock.close()


async def _serve_connection(
    connection: Connection, sessions: Sessions, token: str | None, lobby: Lobby
) -> None:
    """Admits the connection, then serves it as a session of its own (while there is room)."""
    took = False
    session: OpenSession | None = None
    try:
        first = await admit_first(connection, token)
        lobby.admitted(connection)
        if first is None:
            return
        if not (took := await lobby.take(connection)):
            log.warning("refused %s: %d clients are connected", connection.peer, lobby.max_clients)
            return
        session = sessions.open_session(connection)
        log.info("client %s connected (%d in all)", connection.peer, len(lobby.holders))
        session.handle(first)
        await asyncio.sleep(0)  # the handler's task takes its first step, as `relay` does
        await relay(connection.reader, session.handle, "spec-lsp-client")
    finally:
        lobby.admitted(connection)
        connection.release()
        if session is not None:
            session.close()
        if took:
            lobby.leave(connection)
            log.info("client %s disconnected (%d left)", connection.peer, len(lobby.holders))


# -- the accept loop ----------------------------------------------------------------------------
async def serve_clients(
    listener: socket.socket,
    sessions: Sessions,
    token: str | None,
    max_clients: int,
    idle_exit_s: float = 0.0,
) -> None:
    """Admits connections in parallel and serves each admitted one as a session of its own, at
    most `max_clients` at once, until SIGTERM or SIGINT, or (`idle_exit_s` > 0) until no client
    has been served for `idle_exit_s` seconds (an editor's server started on first use)."""
    loop = asyncio.get_running_loop()
    stop: asyncio.Future[str] = loop.create_future()

    def finish(why: str) -> None:
        if not stop.done():
            stop.set_result(why)

    def on_signal(sig: int) -> None:
        finish(signal.Signals(sig).name)

    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
            loop.add_signal_handler(sig, on_signal, sig)
    listener.setblocking(False)
    lobby = Lobby(max_clients)
    tasks: set[asyncio.Task[None]] = set()  # each connection's, from its admission to its end

    async def serve(connection: Connection) -> None:
        try:
            await _serve_connection(connection, sessions, token, lobby)
        except Exception:  # a bug in one session ends that connection, not the server
            log.exception("serving %s failed", connection.peer)

    async def accept() -> None:
        while True:
            try:
                sock, peer = await loop.sock_accept(listener)
            except OSError as exc:  # e.g. out of file descriptors: wait, then accept again
                log.warning("accepting a connection failed: %s", exc)
                await asyncio.sleep(0.5)
                continue
            name = _describe(peer)
            try:
                connection = Connection(sock, name)
            except OSError as exc:  # gone already (reset before its options were set)
                log.warning("dropped %s: %s", name, exc)
                sock.close()
                continue
            lobby.arrive(connection)
            task = asyncio.ensure_future(serve(connection))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    async def watch_idle() -> None:
        while idle_exit_s > 0:
            await asyncio.sleep(min(1.0, idle_exit_s))
            if lobby.idle_for() >= idle_exit_s:
                finish(f"no client for {idle_exit_s:g} s")

    accepting = asyncio.ensure_future(accept())
    watching = asyncio.ensure_future(watch_idle())
    try:
        log.info("stopping: %s", await stop)
    finally:
        for task in (accepting, watching, *tasks):
            task.cancel()
        await asyncio.gather(accepting, watching, *tasks, return_exceptions=True)


def _describe(peer: Any) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return "a local client"  # a Unix socket's peer has no address
