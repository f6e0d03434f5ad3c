"""`spec-lsp record`: a stdio proxy an editor launches instead of the server.

It forwards every frame both ways byte for byte and writes what the editor sent (less the
lifecycle messages and the editor's responses to server requests) as a session. The position
encoding in the header is the one the server chose in its initialize answer. A session holds what
was typed, so its file is private: created 0600 whatever the umask, never through a symbolic
link (`owner_file`).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from spec_lsp.owner_file import open_owner_only
from spec_lsp.replay.format import LIFECYCLE, Event, SessionWriter
from spec_lsp.replay.framing import FramingError, read_frame


class Recorder:
    def __init__(self, writer: SessionWriter) -> None:
        self.writer = writer
        self._lock = threading.Lock()
        self._t0: float | None = None
        self._initialize_id: Any = None

    def from_editor(self, body: bytes) -> None:
        msg = _parse(body)
        if msg is None:
            return
        method = msg.get("method")
        if method == "initialize":
            self._initialize_id = msg.get("id")
        if not isinstance(method, str) or method in LIFECYCLE:
            return
        now = time.monotonic()
        with self._lock:
            if self._t0 is None:
                self._t0 = now
            self.writer.add(Event(t=round((now - self._t0) * 1000.0, 3), msg=msg))

    def from_server(self, body: bytes) -> None:
        if self._initialize_id is None:
            return
        msg = _parse(body)
        if msg is None or "method" in msg or msg.get("id") != self._initialize_id:
            return
        result = msg.get("result") or {}
        encoding = result.get("capabilities", {}).get("positionEncoding", "utf-16")
        with self._lock:
            self.writer.position_encoding = encoding
        self._initialize_id = None

    def close(self) -> None:
        with self._lock:
            self.writer.close()


def _parse(body: bytes) -> dict[str, Any] | None:
    try:
        msg = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return msg if isinstance(msg, dict) else None


def pump(
    src: IO[bytes],
    dst: IO[bytes],
    observe: Callable[[bytes], None],
    on_end: Callable[[], None] | None = None,
) -> None:
    """Copies frames from src to dst unchanged, showing each body to `observe`."""
    try:
        while True:
            try:
                frame = read_frame(src)
            except FramingError as exc:
                print(f"spec-lsp record: {exc}; copying the rest unparsed", file=sys.stderr)
                while chunk := src.read(65536):
                    dst.write(chunk)
                    dst.flush()
                break
            if frame is None:
                break
            raw, body = frame
            dst.write(raw)
            dst.flush()
            observe(body)
    except (BrokenPipeError, OSError, ValueError):
        pass  # the other side went away
    finally:
        if on_end is not None:
            on_end()


def _reap(server: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    """The editor is gone: give the server a moment to exit on its own, then stop it."""
    try:
        server.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        server.terminate()


def record(
    server_cmd: list[str],
    out_path: str,
    source: str = "",
    stdin: IO[bytes] | None = None,
    stdout: IO[bytes] | None = None,
) -> int:
    """Runs the proxy until the editor closes its end and the server exits; returns its code."""
    editor_in = stdin if stdin is not None else sys.stdin.buffer
    editor_out = stdout if stdout is not None else sys.stdout.buffer
    with open_owner_only(out_path) as out:  # first: a refused path starts no server
        server = subprocess.Popen(
            server_cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        assert server.stdin is not None and server.stdout is not None
        server_in, server_out = server.stdin, server.stdout
        recorder = Recorder(SessionWriter(out, source=source))

        def close_server_stdin() -> None:
            with contextlib.suppress(OSError):
                server_in.close()
            threading.Thread(target=_reap, args=(server,), daemon=True).start()

        up = threading.Thread(
            target=pump,
            args=(editor_in, server_in, recorder.from_editor, close_server_stdin),
            daemon=True,
        )
        down = threading.Thread(
            target=pump, args=(server_out, editor_out, recorder.from_server), daemon=True
        )
        up.start()
        down.start()
        down.join()  # the server closed its stdout: it is exiting
        try:
            code = server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.terminate()
            code = server.wait(timeout=10)
        up.join(timeout=1)
        recorder.close()
    return code
