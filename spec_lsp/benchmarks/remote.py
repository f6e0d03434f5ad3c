"""`spec-lsp bench remote`: how soon a superseded remote generation is closed.

Each round starts a long streamed generation on llama-server, cancels it (as a newer keystroke
does) a little after its first text arrived, and measures (1) cancel -> the backend returned with
the HTTP stream closed (the worker is free), and (2) cancel -> the first text of the next
request (the engine stopped the old one: with one slot it could not start the next before).
Without `--url`, the llama-server built by tools/build_llama_server.sh is started on a free port
with the bundled GGUF (`-t 2`). Figures only; nothing here is a timed assert.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

from spec_lsp.engine.api import CancelToken, GenerationRequest
from spec_lsp.remote import RemoteSpec, connect
from spec_lsp.remote.launch import LlamaServer, find_llama_server
from spec_lsp.remote.stream import RemoteBackend

PROMPT = "def fibonacci(n):\n    "


def _round(backend: RemoteBackend, i: int, max_new_tokens: int) -> tuple[float, float]:
    token, first = CancelToken(), threading.Event()
    request = GenerationRequest(
        f"{PROMPT}# round {i}\n", max_new_tokens=max_new_tokens, cancel=token
    )
    request.on_text = lambda _piece: first.set()
    done: list[float] = []

    def run() -> None:
        backend.generate(request)
        done.append(time.perf_counter())

    thread = threading.Thread(target=run)
    thread.start()
    first.wait(30)
    time.sleep(0.01 * (i % 5))  # cancel at different points of the stream
    cancelled = time.perf_counter()
    token.cancel()
    thread.join(30)
    backend.generate(GenerationRequest(PROMPT, max_new_tokens=1))
    return (done[0] - cancelled) * 1000, (time.perf_counter() - cancelled) * 1000


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 1),
        "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 1),
        "max": round(ordered[-1], 1),
    }


def measure(url: str, rounds: int, max_new_tokens: int) -> dict[str, object]:
    backend = connect(RemoteSpec(kind="llama-server", url=url, read_timeout_s=60.0))
    backend.generate(GenerationRequest(PROMPT, max_new_tokens=4))  # warm: load, prompt cache
    close_ms, next_ms = [], []
    for i in range(rounds):
        c, n = _round(backend, i, max_new_tokens)
        close_ms.append(c)
        next_ms.append(n)
    status = backend.status()
    backend.close()
    return {
        "rounds": rounds,
        "cancel_to_closed_ms": _summary(close_ms),
        "cancel_to_next_answer_ms": _summary(next_ms),
        "health": status,
    }


def main(args: argparse.Namespace) -> int:
    """`args`: url (None: start the cached llama-server), rounds, max_new_tokens, json."""
    server = None
    url = args.url
    if url is None:
        from spec_lsp.engine.from_source import bundled_gguf

        binary = find_llama_server()
        if binary is None:
            print(
                "spec-lsp: no llama-server; build it with tools/build_llama_server.sh",
                file=sys.stderr,
            )
            return 1
        server = LlamaServer(binary, bundled_gguf("smollm2-135m-instruct"))
        server.start()
        url = server.url
    try:
        figures = measure(url, args.rounds, args.max_new_tokens)
    finally:
        if server is not None:
            server.stop()
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0
