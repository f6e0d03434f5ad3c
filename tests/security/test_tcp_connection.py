"""One client's connection (`transport.Connection`) on a socket pair: bounded writes, its end."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from spec_lsp import transport


@pytest.fixture
def pair(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[transport.Connection, socket.socket]]:
    monkeypatch.setattr(transport, "SEND_TIMEOUT_S", 1.0)
    ours, theirs = socket.socketpair()
    connection = transport.Connection(ours, "a test client")
    yield connection, theirs
    connection.release()
    theirs.close()


def test_a_client_that_stops_reading_is_disconnected_instead_of_blocking_the_server(
    pair: tuple[transport.Connection, socket.socket],
) -> None:
    connection, _client = pair  # the client never reads
    for _ in range(64):  # far more than the socket buffers hold
        connection.write(b"x" * 2**20)
        if connection.closed:
            break
    assert connection.closed


def test_nothing_is_written_after_the_close(
    pair: tuple[transport.Connection, socket.socket],
) -> None:
    connection, client = pair
    connection.write(b"before")
    connection.close()
    connection.write(b"after")
    client.settimeout(10)
    got = b""
    while chunk := client.recv(100):
        got += chunk
    assert got == b"before"


def test_a_client_that_closed_is_seen_ending_before_its_end_is_read(
    pair: tuple[transport.Connection, socket.socket],
) -> None:
    connection, client = pair
    client.sendall(b"unread bytes")
    assert not connection.ending()  # data waits: still there
    assert connection.reader.read(12) == b"unread bytes"
    assert not connection.ending()
    client.close()
    assert connection.ending()


def test_a_relative_socket_path_is_removed_at_close_after_the_server_left_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    listener = transport.listen_unix("shared.sock")
    assert listener.address == str(tmp_path / "shared.sock")
    monkeypatch.chdir("/")  # as the server does once it is listening (trust.leave_workspace)
    listener.close()
    assert not (tmp_path / "shared.sock").exists()
