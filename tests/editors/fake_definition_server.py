"""A second language server for the editor tests, standard library only: it answers
`textDocument/definition` and `textDocument/hover` for the names of `KNOWN` (a definition in
the file `--target`), null for any other, and appends each name it is asked about (and the
method) to the JSON-lines file `--log`. Documents are synced whole (textDocumentSync 1).

    python fake_definition_server.py --target /tmp/ws/geometry.py --log /tmp/asked.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, BinaryIO

# name -> (line of its definition in the target file, hover markdown)
KNOWN = {
    "rect_area": (
        3,
        "```python\ndef rect_area(width: float, height: float) -> float\n```\n---\n"
        "The area of a width x height rectangle.",
    ),
}
IDENT = re.compile(r"[A-Za-z_]\w*")


def read_message(stream: BinaryIO) -> dict[str, Any] | None:
    length = 0
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    return json.loads(stream.read(length))


def write_message(stream: BinaryIO, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


def name_at(text: str, line: int, character: int) -> str:
    """The identifier at (line, character) of `text` (ASCII: UTF-16 units are characters)."""
    lines = text.split("\n")
    if line >= len(lines):
        return ""
    for match in IDENT.finditer(lines[line]):
        if match.start() <= character < match.end():
            return match.group(0)
    return ""


class Server:
    def __init__(self, target: Path, log: Path) -> None:
        self.target, self.log = target, log
        self.docs: dict[str, str] = {}

    def answer(self, method: str, params: dict[str, Any]) -> Any:
        if method == "initialize":
            capabilities = {
                "textDocumentSync": 1,
                "definitionProvider": True,
                "hoverProvider": True,
            }
            return {"capabilities": capabilities, "serverInfo": {"name": "fake-definitions"}}
        if method in ("textDocument/definition", "textDocument/hover"):
            doc, pos = params["textDocument"]["uri"], params["position"]
            name = name_at(self.docs.get(doc, ""), pos["line"], pos["character"])
            with self.log.open("a", encoding="utf-8") as out:
                out.write(json.dumps({"method": method, "name": name}) + "\n")
            if name not in KNOWN:
                return None
            line, hover = KNOWN[name]
            if method == "textDocument/hover":
                return {"contents": {"kind": "markdown", "value": hover}}
            start = {"line": line, "character": 4}
            end = {"line": line, "character": 4 + len(name)}
            return {"uri": self.target.as_uri(), "range": {"start": start, "end": end}}
        return None

    def notice(self, method: str, params: dict[str, Any]) -> None:
        if method == "textDocument/didOpen":
            self.docs[params["textDocument"]["uri"]] = params["textDocument"]["text"]
        elif method == "textDocument/didChange":
            self.docs[params["textDocument"]["uri"]] = params["contentChanges"][-1]["text"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    args = parser.parse_args()
    server = Server(args.target, args.log)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while (message := read_message(stdin)) is not None:
        method, params = message.get("method", ""), message.get("params") or {}
        if method == "exit":
            return
        if "id" in message and method:  # a request (shutdown's answer is null too)
            result = server.answer(method, params)
            write_message(stdout, {"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif method:
            server.notice(method, params)


if __name__ == "__main__":
    main()
