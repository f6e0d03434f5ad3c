"""A small fake engine on 127.0.0.1 (random port) that streams like llama-server or vLLM.

`mode` picks the behaviour of the next requests: "ok", "5xx", "malformed" (a bad chunk after
two good ones), "reset" (the connection dropped mid-stream), "slow" (no chunk for a long time).
Each request's body is kept, and `closed` counts streams the client closed before their end.
`prefill_s`: silence before a stream's first chunk (a prompt being evaluated). A non-streamed
request (`stream: false`, the backend's prompt-only warm-up) is answered as llama-server does, one
JSON object, after `warm_delay_s` (or once `warm_gate` is set, when a test holds warm-ups in
flight), or HTTP 503 when `warm_mode` is "5xx"; `warm_bodies` keeps them and `warm_done` counts
those answered. `hold_after` n: a stream stops after its n-th chunk until `released` is set (a
chunk the engine has not sent yet, for as long as the test needs).
`GET /metrics` answers `metrics` (Prometheus text), or 501 as llama-server without `--metrics`
when it is None.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WAIT_S = 30.0  # a bound on every wait, never a measured time


class FakeEngine:
    def __init__(self, pieces: list[str], delay_s: float = 0.01, flavor: str = "llama") -> None:
        self.pieces = pieces
        self.delay_s = delay_s
        self.flavor = flavor  # llama | openai
        self.mode = "ok"
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.closed = 0
        self.sent: list[int] = []  # chunks written per request
        self.metrics: str | None = None
        self.metrics_gets = 0
        self.prefill_s = 0.0
        self.warm_delay_s = 0.0
        self.warm_mode = "ok"
        self.warm_bodies: list[dict[str, Any]] = []
        self.warm_done = 0
        self.warm_gate: threading.Event | None = None
        self.hold_after: int | None = None
        self.released = threading.Event()
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                # The silence this request gets is the one set when it arrived (a test may
                # change prefill_s as soon as it sees the body).
                prefill_s = engine.prefill_s
                engine.bodies.append(body)
                engine.paths.append(self.path)
                if self.path == "/tokenize":
                    self._json({"tokens": list(range(len(body.get("content", "")) // 3))})
                    return
                if body.get("stream") is False:
                    engine.warm_bodies.append(body)
                    time.sleep(engine.warm_delay_s)
                    if engine.warm_gate is not None:
                        engine.warm_gate.wait(WAIT_S)
                    if engine.warm_mode == "5xx":
                        self._json({"error": "overloaded"}, 503)
                        return
                    n = len(str(body.get("prompt", ""))) // 3
                    timings = {"cache_n": 0, "prompt_n": n, "predicted_n": 1}
                    self._json({"content": "\n", "tokens_evaluated": n, "timings": timings})
                    engine.warm_done += 1
                    return
                engine.serve(self, prefill_s)

            def do_GET(self) -> None:  # noqa: N802
                if self.path != "/metrics" or engine.metrics is None:
                    self._json({"error": {"code": 501, "message": "no metrics"}}, 501)
                    return
                engine.metrics_gets += 1
                data = engine.metrics.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _json(self, obj: object, status: int = 200) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        # `stop()` returns within one poll of the serving loop (http.server's default: 0.5 s).
        serve = lambda: self.httpd.serve_forever(poll_interval=0.01)  # noqa: E731
        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.released.set()  # a held stream or warm-up ends
        if self.warm_gate is not None:
            self.warm_gate.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def _chunk(self, text: str, last: bool) -> dict[str, Any]:
        if self.flavor == "openai":
            finish = "length" if last else None
            return {"choices": [{"index": 0, "text": text, "finish_reason": finish}]}
        out: dict[str, Any] = {"content": text, "stop": last, "tokens_evaluated": 12}
        out["timings"] = {"cache_n": 8, "prompt_n": 4, "predicted_n": 1, "prompt_ms": 1.5}
        if last:
            out.update(stop_type="limit", tokens_cached=20)
            out["timings"].update(draft_n=6, draft_n_accepted=4)
        return out

    def serve(self, h: BaseHTTPRequestHandler, prefill_s: float = 0.0) -> None:
        if self.mode == "5xx":
            data = b'{"error": "overloaded"}'
            h.send_response(503)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            return
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        sent = 0
        try:
            if prefill_s:
                self._write(h, b": evaluating the prompt\n\n")  # llama-server sends headers at once
                time.sleep(prefill_s)
            for i, piece in enumerate(self.pieces):
                if self.mode == "slow":
                    time.sleep(30)
                if self.mode == "malformed" and i == 2:
                    self._write(h, b"data: {not json\n\n")
                    break
                if self.mode == "reset" and i == 2:
                    h.connection.shutdown(socket.SHUT_RDWR)  # no terminating chunk: a reset
                    return
                last = i == len(self.pieces) - 1
                self._write(h, f"data: {json.dumps(self._chunk(piece, last))}\n\n".encode())
                sent += 1
                if sent == self.hold_after:
                    self.released.wait(WAIT_S)
                time.sleep(self.delay_s)
            if self.flavor == "openai" and self.mode == "ok":
                usage = {"prompt_tokens": 10, "completion_tokens": sent}
                usage["prompt_tokens_details"] = {"cached_tokens": 6}  # type: ignore[assignment]
                self._write(h, f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())
                self._write(h, b"data: [DONE]\n\n")
            self._write(h, b"", end=True)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.closed += 1
        finally:
            self.sent.append(sent)

    @staticmethod
    def _write(h: BaseHTTPRequestHandler, data: bytes, end: bool = False) -> None:
        if data:
            h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        if end:
            h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()


class Clock:
    """A clock that moves only when the test says (`connect(spec, clock=...)`, `Health`)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def wait_until(predicate: object, timeout: float = 5.0) -> bool:
    """Polls `predicate` every 10 ms until it holds (True) or `timeout` seconds pass (False)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.01)
    return False
