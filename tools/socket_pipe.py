"""Joins stdin/stdout to a Unix socket, so that
`spec-lsp replay --server-cmd "python tools/socket_pipe.py PATH"` replays against a running
`spec-lsp serve --socket PATH` as one more client (docs/benchmarks.md: the replay beside an idle
client). Ends when the server closes the connection."""

from __future__ import annotations

import os
import socket
import sys
import threading


def main(path: str) -> None:
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(path)

    def up() -> None:
        while data := os.read(0, 65536):
            sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)

    threading.Thread(target=up, daemon=True).start()
    while data := sock.recv(65536):
        os.write(1, data)


if __name__ == "__main__":
    main(sys.argv[1])
