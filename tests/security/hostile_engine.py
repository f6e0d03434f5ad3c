"""An engine on 127.0.0.1 that answers with bodies too large to hold: a hostile one.

Each answer's body is written in pieces as it is sent (never held whole here), so a test can offer
hundreds of MB cheaply, and `sent` records how many bytes of each path's body went out before the
client closed the connection; `ended` is set after each answer. `sizes` sets the body of a path:
"/completion" (an HTTP 500 error body), "/metrics" (a 200 page), "/tokenize" and a warm-up
(`stream: false`) (200 JSON that never ends). A size of -1 drips one byte every `drip_s`, without
end, until the client closes.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PIECE = 1 << 20


class HostileEngine:
    def __init__(self, sizes: dict[str, int], drip_s: float = 0.05) -> None:
        self.sizes, self.drip_s = sizes, drip_s
        self.sent: dict[str, list[int]] = {}
        self.ended = threading.Event()
        self.stopping = threading.Event()
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/tokenize":
                    engine.answer(self, "/tokenize", 200, b'{"tokens": [' + b"1," * 8)
                elif request.get("stream") is False:
                    engine.answer(self, "warm-up", 200, b'{"content": "' + b"x" * 8)
                else:
                    engine.answer(self, "/completion", 500, b'{"error": "' + b"x" * 8)

            def do_GET(self) -> None:  # noqa: N802
                engine.answer(self, "/metrics", 200, b"# HELP " + b"x" * 64 + b"\n")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def answer(self, h: BaseHTTPRequestHandler, what: str, status: int, pattern: bytes) -> None:
        size = self.sizes.get(what, 0)
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(size if size >= 0 else 1 << 40))
        h.end_headers()
        sent = 0
        piece = (pattern * (PIECE // len(pattern) + 1))[:PIECE]
        try:
            while (size < 0 or sent < size) and not self.stopping.is_set():
                data = piece[:1] if size < 0 else piece[: size - sent]
                h.wfile.write(data)
                h.wfile.flush()
                sent += len(data)
                if size < 0:
                    time.sleep(self.drip_s)
        except OSError:  # the client closed the connection: what a bounded reader does
            pass
        finally:
            self.sent.setdefault(what, []).append(sent)
            self.ended.set()

    def wait(self, what: str, timeout: float = 60.0) -> int:
        """The bytes sent of `what`'s first answer, once it ended."""
        end = time.monotonic() + timeout
        while what not in self.sent:
            if time.monotonic() > end:
                raise TimeoutError(f"no answer to {what} ended within {timeout} s")
            self.ended.wait(0.05)
            self.ended.clear()
        return self.sent[what][0]

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
