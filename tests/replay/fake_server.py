"""A small LSP server for the replay tests: answers after a set delay, with known suggestions.

python fake_server.py [--delay-ms D] [--ignore-cancel] [--target FILE] [--text TEXT] [--log PATH]

- inlineCompletion/completion answer after D ms with the document as it was when asked: the
  next 12 characters of FILE from the cursor when the document's text before the cursor is
  FILE's, else TEXT (default "pass").
- $/cancelRequest answers a pending request with RequestCancelled at once, unless
  --ignore-cancel (then it answers late, which makes stale answers on purpose).
- --log appends every frame it reads, byte for byte, to PATH.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import queue
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from spec_lsp.replay.document import ReplayDocument  # noqa: E402
from spec_lsp.replay.framing import encode, read_frame  # noqa: E402


def reader(log: Path | None, inbox: queue.Queue[dict[str, Any] | None]) -> None:
    stream = sys.stdin.buffer
    while (frame := read_frame(stream)) is not None:
        raw, body = frame
        if log is not None:
            with log.open("ab") as f:
                f.write(raw)
        inbox.put(json.loads(body))
    inbox.put(None)


class FakeServer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.target = Path(args.target).read_text() if args.target else None
        self.docs: dict[str, ReplayDocument] = {}
        self.pending: list[tuple[float, int, dict[str, Any]]] = []  # (due, id, response)
        self.stats: dict[str, Any] = {"requests": 0, "cancelled": 0, "answered": 0}

    def send(self, msg: dict[str, Any]) -> None:
        sys.stdout.buffer.write(encode(msg))
        sys.stdout.buffer.flush()

    def suggestion(self, uri: str, position: dict[str, Any]) -> str:
        doc = self.docs[uri]
        cursor = doc.offset(position)
        if self.target is not None and self.target[:cursor] == doc.text[:cursor]:
            return self.target[cursor : cursor + 12]
        return self.args.text

    def handle(self, msg: dict[str, Any]) -> bool:
        method, params, rid = msg.get("method"), msg.get("params") or {}, msg.get("id")
        if method == "initialize":
            options = params.get("initializationOptions") or {}
            self.stats["initializationOptions"] = options
            # What a real server measures itself: drafting decodes faster than the target alone.
            drafting = options.get("speculation") != "off"
            self.stats["decode"] = {"tokensPerS": 30.0 if drafting else 20.0}
            self.stats["acceptance"] = 0.5 if drafting else None
            caps = {
                "positionEncoding": "utf-16",
                "textDocumentSync": 2,
                "inlineCompletionProvider": True,
            }
            self.send({"jsonrpc": "2.0", "id": rid, "result": {"capabilities": caps}})
        elif method == "textDocument/didOpen":
            d = params["textDocument"]
            self.docs[d["uri"]] = ReplayDocument(d["uri"], d["languageId"], d["version"], d["text"])
        elif method == "textDocument/didChange":
            doc = self.docs[params["textDocument"]["uri"]]
            doc.apply(params["contentChanges"], params["textDocument"]["version"])
        elif method == "textDocument/didClose":
            self.docs.pop(params["textDocument"]["uri"], None)
        elif method in ("textDocument/inlineCompletion", "textDocument/completion"):
            self.stats["requests"] += 1
            text = self.suggestion(params["textDocument"]["uri"], params["position"])
            if method == "textDocument/inlineCompletion":
                result: Any = {"items": [{"insertText": text}]}
            else:
                result = {"isIncomplete": False, "items": [{"label": text, "insertText": text}]}
            due = time.monotonic() + self.args.delay_ms / 1000.0
            heapq.heappush(
                self.pending, (due, rid, {"jsonrpc": "2.0", "id": rid, "result": result})
            )
        elif method == "$/cancelRequest" and not self.args.ignore_cancel:
            for i, (_, pid, _) in enumerate(self.pending):
                if pid == params.get("id"):
                    del self.pending[i]
                    heapq.heapify(self.pending)
                    self.stats["cancelled"] += 1
                    error = {"code": -32800, "message": "cancelled"}
                    self.send({"jsonrpc": "2.0", "id": pid, "error": error})
                    break
        elif method == "spec-lsp/stats":
            self.send({"jsonrpc": "2.0", "id": rid, "result": self.stats})
        elif method == "spec-lsp/status":
            self.send({"jsonrpc": "2.0", "id": rid, "result": {"state": "ready"}})
        elif method == "shutdown":
            self.send({"jsonrpc": "2.0", "id": rid, "result": None})
        elif method == "exit":
            return False
        elif rid is not None and method is not None:
            error = {"code": -32601, "message": f"no method {method}"}
            self.send({"jsonrpc": "2.0", "id": rid, "error": error})
        return True

    def flush_due(self) -> None:
        while self.pending and self.pending[0][0] <= time.monotonic():
            _, _, response = heapq.heappop(self.pending)
            self.stats["answered"] += 1
            self.send(response)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--ignore-cancel", action="store_true")
    parser.add_argument("--target")
    parser.add_argument("--text", default="pass")
    parser.add_argument("--log", type=Path)
    args = parser.parse_args()
    server = FakeServer(args)
    inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
    threading.Thread(target=reader, args=(args.log, inbox), daemon=True).start()
    while True:
        server.flush_due()
        timeout = max(0.0, server.pending[0][0] - time.monotonic()) if server.pending else 1.0
        try:
            msg = inbox.get(timeout=timeout)
        except queue.Empty:
            continue
        if msg is None or not server.handle(msg):
            return 0


if __name__ == "__main__":
    code = main()
    # The stdin reader is a daemon thread that may still sit in read(): leave without the
    # interpreter shutdown, which would abort on the stdin buffer's lock (exit code 250).
    sys.stdout.flush()
    os._exit(code)
