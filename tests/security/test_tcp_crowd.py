"""A shared server under clients without the token: they cost it neither memory nor its user.

A connection's first frame is read before its token is checked, so it is read small and strictly
(`wire.read_first`, `access.MAX_FIRST_MESSAGE_BYTES`): a 64 MiB frame, or a wrong-token frame
with a 64 MiB one behind it, leaves the server's peak memory where it was. Connections are
admitted in parallel and only an admitted one takes a session (at most `MAX_CLIENTS`), so a loop
reconnecting whenever it is dropped, or a crowd of silent connections, cannot keep the user's
editor out. Real
`spec-lsp serve --tcp` subprocesses, as in test_tcp.py.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator

import pytest

from spec_lsp.admission import ADMITTING_MAX
from spec_lsp.server.host import MAX_CLIENTS
from tests.fuzz.shared_process import TOKEN, SharedServer, frame, initialize_message
from tests.security.memory import MIB, peak_rss

pytestmark = pytest.mark.timeout(300)
BIG = 64 * MIB
# What a client may do to memory before its token is checked: far less than this.
MEMORY_BOUND = 100 * MIB


@pytest.fixture
def server() -> Iterator[SharedServer]:
    shared = SharedServer("no-such-preset")
    yield shared
    shared.close()


def big_frame() -> bytes:
    """A 64 MiB frame (the framing's own cap) of a JSON list that parses into millions of
    objects."""
    body = (b"[" + b"0," * ((BIG - 4) // 2) + b"0]").ljust(BIG)
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_a_64_mib_frame_before_the_token_costs_the_server_no_memory(server: SharedServer) -> None:
    idle = peak_rss(server.process.pid)
    assert server.refused(big_frame()) == b""
    wrong = frame(initialize_message("wrong-" + TOKEN))
    assert server.refused(wrong + big_frame()) == b""  # nothing after the first frame is read
    grown = peak_rss(server.process.pid) - idle
    assert grown < MEMORY_BOUND, f"peak memory grew by {grown / MIB:.0f} MiB"
    client = server.connect()  # and the user is served
    try:
        client.initialize()
    finally:
        client.close()


class ReconnectLoop:
    """A client without the token that connects, sends nothing, waits to be dropped and
    connects again at once, in a thread of its own."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.address = address
        self.stop = threading.Event()
        self.connected = threading.Event()
        self.rounds = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            with contextlib.suppress(OSError), socket.create_connection(self.address) as sock:
                self.rounds += 1
                self.connected.set()
                sock.settimeout(0.2)
                while not self.stop.is_set():
                    with contextlib.suppress(TimeoutError):
                        if sock.recv(1) == b"":
                            break  # dropped: again

    def running(self) -> bool:
        return self._thread.is_alive() and not self.stop.is_set()

    def end(self) -> int:
        self.stop.set()
        self._thread.join(30)
        return self.rounds


def test_a_reconnect_loop_without_the_token_cannot_keep_the_user_out(
    server: SharedServer,
) -> None:
    assert isinstance(server.address, tuple)
    loops = [ReconnectLoop(server.address) for _ in range(4)]
    try:
        for loop in loops:
            assert loop.connected.wait(30)
        client = server.connect()  # while every loop holds a connection
        try:
            assert client.initialize()["capabilities"]["inlineCompletionProvider"] is not None
            assert client.alive()
        finally:
            client.close()
        assert all(loop.running() for loop in loops)  # they never stopped trying
    finally:
        rounds = [loop.end() for loop in loops]
    assert min(rounds) >= 1


def test_a_crowd_of_silent_connections_cannot_keep_the_user_out(server: SharedServer) -> None:
    assert isinstance(server.address, tuple)
    crowd = [socket.create_connection(server.address) for _ in range(2 * ADMITTING_MAX)]
    try:
        client = server.connect()
        try:
            client.initialize()
            assert client.result("spec-lsp/documentText", {"uri": "file:///a.py"}) is None
        finally:
            client.close()
    finally:
        for sock in crowd:
            sock.close()
    assert "connections wait for admission" in server.stderr_text()


def test_clients_beyond_the_cap_are_refused_and_the_ones_served_stay_served(
    server: SharedServer,
) -> None:
    clients = [server.connect() for _ in range(MAX_CLIENTS)]
    try:
        for client in clients:
            client.initialize()
        one_more = server.connect()
        with pytest.raises(ConnectionError):
            one_more.initialize()
        one_more.close()
        assert all(client.alive() for client in clients)
        assert clients[0].result("spec-lsp/status")["clients"] == MAX_CLIENTS
        clients.pop().close()  # a place is free again
        again = server.connect()
        clients.append(again)
        assert json.dumps(again.initialize())
    finally:
        for client in clients:
            client.close()
