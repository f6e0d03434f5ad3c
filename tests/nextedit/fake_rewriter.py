"""A deterministic stand-in for a next-edit model: a fake llama-server on 127.0.0.1.

Random weights predict gibberish and the real pair takes seconds, so end-to-end tests (the editors',
the server's, `bench next-edit`'s) talk to this instead, through the remote backend, with a preset
whose `next_edit = "qwen-chat"`. It reads the prompt as `spec_lsp.nextedit.formats.QwenChat`
renders it: the region between `<region>` and `</region>` (after the file excerpt and the recent
edits), and the recent edits' diff. It plays a model that carries a rename through: where the
latest diff's `-` and `+` lines differ in one identifier (`width` -> `w`), it writes the region
with that identifier renamed in every line but the edited ones; with no rename in the diff it
repeats the region (no edit). The answer streams as llama-server's `/completion` does, and stops
at `</region>` (`stop_type: word`).

    fake = FakeRewriter()                 # a free port
    preset = fake.write_preset(tmp_path)  # spec-lsp serve --preset <preset>
    ...; fake.stop()

`python -m tests.nextedit.fake_rewriter --preset-dir DIR` serves until killed, after printing
`READY <url> <preset path>` (for tests that start processes).
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
END = "</region>"


def rename_in(diff: str) -> tuple[str, str] | None:
    """The identifier the diff's last `-`/`+` line pair renamed, as (old, new)."""
    minus = [line[1:] for line in diff.splitlines() if line.startswith("-")]
    plus = [line[1:] for line in diff.splitlines() if line.startswith("+")]
    if not minus or not plus:
        return None
    old, new = IDENT.findall(minus[-1]), IDENT.findall(plus[-1])
    if len(old) != len(new):
        return None
    pairs = {(a, b) for a, b in zip(old, new, strict=True) if a != b}
    return pairs.pop() if len(pairs) == 1 else None


def rewrite(prompt: str) -> str:
    """The region as the fake model rewrites it, followed by the end marker."""
    user = prompt.rsplit("<|im_start|>user\n", 1)[-1]
    region = user.split("<region>\n", 1)[1].split(END, 1)[0]
    diff = user.split("```diff\n", 1)[1].split("```", 1)[0] if "```diff\n" in user else ""
    found = rename_in(diff)
    if found is None:
        return region + END
    old, new = found
    edited = {line[1:] for line in diff.splitlines() if line.startswith("+")}
    lines = [
        line if line in edited else re.sub(rf"\b{re.escape(old)}\b", new, line)
        for line in region.split("\n")
    ]
    return "\n".join(lines) + END


class FakeRewriter:
    def __init__(self, delay_s: float = 0.005) -> None:
        self.delay_s = delay_s
        self.prompts: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path == "/tokenize":
                    self._json({"tokens": list(range(len(body.get("content", "")) // 3))})
                    return
                prompt = str(body.get("prompt", ""))
                if body.get("stream") is False:  # a prompt-only warm-up
                    self._json({"content": "", "tokens_evaluated": len(prompt) // 3})
                    return
                fake.prompts.append(prompt)
                fake.stream(self, prompt, body)

            def do_GET(self) -> None:  # noqa: N802
                self._json({"error": {"code": 501, "message": "no metrics"}}, 501)

            def _json(self, obj: object, status: int = 200) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def stream(self, h: BaseHTTPRequestHandler, prompt: str, body: dict[str, Any]) -> None:
        """The answer in pieces of a few characters, as llama-server streams; a prompt that is
        not a next-edit prompt (a completion's) gets a short fixed answer."""
        if "<region>\n" in prompt and END in prompt:
            answer, stop_type = rewrite(prompt), "word"
            answer = answer[: answer.index(END)]
        else:
            answer, stop_type = "pass\n", "eos"
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        n = len(prompt) // 3
        try:
            for i in range(0, len(answer), 4):
                time.sleep(self.delay_s)
                self._write(h, {"content": answer[i : i + 4], "stop": False})
            timings = {"cache_n": 0, "prompt_n": n, "predicted_n": len(answer) // 4 + 1}
            last = {"content": "", "stop": True, "stop_type": stop_type, "timings": timings}
            self._write(h, {**last, "tokens_evaluated": n})
            h.wfile.write(b"0\r\n\r\n")
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client cancelled: it closed the stream

    @staticmethod
    def _write(h: BaseHTTPRequestHandler, obj: dict[str, Any]) -> None:
        data = b"data: " + json.dumps(obj).encode() + b"\n\n"
        h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        h.wfile.flush()

    def write_preset(self, folder: Path | str) -> Path:
        """A preset whose backend is this fake (next edits in the qwen-chat format)."""
        path = Path(folder) / "nextedit-fake.toml"
        path.write_text(
            'description = "a deterministic next-edit model (tests)"\n'
            'target = "bundled:smollm2-135m-instruct"\n'
            'fim = "none"\nnext_edit = "qwen-chat"\ncontext_tokens = 2048\n\n'
            f'[backend]\nkind = "llama-server"\nurl = "{self.url}"\n'
            "connect_timeout_s = 2.0\nread_timeout_s = 20.0\n"
        )
        return path

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--preset-dir", required=True)
    args = parser.parse_args()
    fake = FakeRewriter()
    preset = fake.write_preset(args.preset_dir)
    print(f"READY {fake.url} {preset}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":
    main()
