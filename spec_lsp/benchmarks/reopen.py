"""A file reopened, and a server restarted: does the first request find its window warm?

`python -m spec_lsp.benchmarks.reopen SESSION... --preset coder [--json FILE]` takes each typing
session's file as the session left it (its last text, the cursor at its last edit's end) and asks
a real server (`spec-lsp serve`) for an inline completion there, as an editor would:

- **cold**: a server with no KV on disk, the file just opened (what a first keystroke in a file
  meets: a short window answers while the full one is cold);
- **warm**: a second server, its KV on disk in a fresh folder (or `--kv-folder`): the file
  opened, the editor says where its cursor rests (`spec-lsp/didMoveCursor`), the server's
  warm-up fills the window there (no generation or warm-up has run for a second), then the
  request: what a warm window answers;
- **reopened**: the same server, the file closed (its KV written to disk, its window start and
  anchor kept) and opened again with the same text, the cursor where it was (the answer cache
  answers that: the same text and cursor);
- **restarted**: a third server started on the same folder, the file opened again: the KV the
  second one wrote at its shutdown is all it has.

Each request's latency (sent to answered), the answer, and the server's own counts for it (from
`spec-lsp/stats`: prompt tokens, reused, restored from disk, prefilled; whether a short window
answered). A reopened or restarted request is answered from a warm window when it prefilled a
few tokens only, and its answer is then the warm one. Torch-free: it speaks LSP to the server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from spec_lsp.replay.client import LspClient
from spec_lsp.replay.document import ReplayDocument, position_of
from spec_lsp.replay.format import Session, read_session
from spec_lsp.replay.handshake import initialize, wait_ready
from spec_lsp.replay.replayer import default_server_cmd

LOAD_TIMEOUT_S = 600.0
ANSWER_TIMEOUT_S = 300.0
SETTLE_S = 1.0  # the warm-up is done when its count stays still this long with nothing running
SETTLE_MAX_S = 120.0
PHASES = ("cold", "warm", "reopened", "restarted")


@dataclass
class Ask:
    """One request's figures."""

    latency_ms: float
    answer: str
    prompt_tokens: int
    reused_tokens: int
    restored_tokens: int
    prefilled_tokens: int
    short_window: bool


@dataclass
class FileRow:
    name: str
    uri: str
    position: dict[str, int]
    asks: dict[str, Ask] = field(default_factory=dict)


def last_state(session: Session) -> tuple[str, str, str, dict[str, int]]:
    """(uri, languageId, text, cursor position in UTF-16) of the session's file as the session
    left it: the cursor at its last edit's end."""
    encoding = session.header.position_encoding
    doc: ReplayDocument | None = None
    cursor = 0
    for event in session.events:
        params = event.msg.get("params") or {}
        if event.method == "textDocument/didOpen":
            item = params["textDocument"]
            doc = ReplayDocument(item["uri"], item.get("languageId", ""), 0, item["text"], encoding)
        elif event.method == "textDocument/didChange" and doc is not None:
            edits = doc.apply(params["contentChanges"], doc.version + 1)
            if edits:
                cursor = edits[-1].end_after
    if doc is None:
        raise ValueError(f"session {session.name} opens no file")
    return doc.uri, doc.language_id, doc.text, position_of(doc.text, cursor, "utf-16")


async def _counts(client: LspClient) -> dict[str, Any]:
    stats = await client.request("spec-lsp/stats", {}, timeout=30.0) or {}
    reuse = stats.get("kvReuse") or {}
    return {
        "prompt": reuse.get("promptTokens", 0),
        "reused": reuse.get("reusedTokens", 0),
        "restored": reuse.get("restoredTokens", 0),
        "prefilled": reuse.get("prefilledTokens", 0),
        "short": stats.get("shortWindow", 0),
        "warming": (stats.get("warmUp") or {}).get("running", 0),
        "running": stats.get("running", 0),
    }


async def _ask(client: LspClient, uri: str, position: dict[str, int]) -> Ask:
    before = await _counts(client)
    params = {"textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": 2}}
    t = time.perf_counter()
    result = await client.request("textDocument/inlineCompletion", params, ANSWER_TIMEOUT_S)
    latency = (time.perf_counter() - t) * 1000
    items = (result or {}).get("items", []) if isinstance(result, dict) else result or []
    answer = str(items[0].get("insertText", "")) if items else ""
    await _settled(client)  # the generation may go on after the answer: its counts with it
    after = await _counts(client)
    delta = {k: after[k] - before[k] for k in ("prompt", "reused", "restored", "prefilled")}
    return Ask(
        round(latency, 1),
        answer,
        delta["prompt"],
        delta["reused"],
        delta["restored"],
        delta["prefilled"],
        after["short"] > before["short"],
    )


async def _settled(client: LspClient) -> None:
    """Waits until no generation and no warm-up has run for `SETTLE_S`."""
    deadline = time.monotonic() + SETTLE_MAX_S
    idle_since = time.monotonic()
    while time.monotonic() < deadline:
        counts = await _counts(client)
        now = time.monotonic()
        if counts["running"] or counts["warming"]:
            idle_since = now
        elif now - idle_since >= SETTLE_S:
            return
        await asyncio.sleep(0.2)


async def _server(cmd: list[str], options: dict[str, Any], disk: str) -> LspClient:
    """A started server whose KV on disk is `disk` (`SPEC_LSP_KV_DISK`: off, or a folder)."""
    client = LspClient(cmd, stderr=_stderr(), env={"SPEC_LSP_KV_DISK": disk})
    await client.start()
    await initialize(client, "utf-16", options)
    await wait_ready(client, LOAD_TIMEOUT_S)
    return client


def _stderr() -> IO[bytes] | None:
    """The servers' stderr: ours where it is a file (not under a capture)."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    return sys.stderr.buffer


def _open(client: LspClient, uri: str, language: str, text: str, version: int) -> None:
    item = {"uri": uri, "languageId": language, "version": version, "text": text}
    client.notify("textDocument/didOpen", {"textDocument": item})


async def run(
    sessions: list[Session],
    cmd: list[str],
    options: dict[str, Any],
    folder: Path,
    settle_s: float = 0.0,
) -> list[FileRow]:
    """Three servers: one with no KV on disk (cold), one filling `folder` (warm, reopened), one
    restarted on it (restarted). `settle_s`: the warm-up's time, where the server's stats do not
    say whether one runs (0: until they say none has for a second)."""
    files = [last_state(s) for s in sessions]
    rows = [FileRow(s.name, f[0], f[3]) for s, f in zip(sessions, files, strict=True)]
    for phase, disk in (("cold", "off"), ("warm", str(folder)), ("restarted", str(folder))):
        client = await _server(cmd, options, disk)
        try:
            for row, (uri, language, text, position) in zip(rows, files, strict=True):
                _open(client, uri, language, text, 1)
                if phase == "warm":
                    move = {"textDocument": {"uri": uri, "version": 1}, "position": position}
                    client.notify("spec-lsp/didMoveCursor", move)
                    await asyncio.sleep(settle_s or 0.3)
                    await _settled(client)
                row.asks[phase] = await _ask(client, uri, position)
                client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
                if phase == "warm":
                    _open(client, uri, language, text, 2)
                    row.asks["reopened"] = await _ask(client, uri, position)
                    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
                print(f"{row.name}: {phase} done", file=sys.stderr)
        finally:
            await client.stop(timeout=30.0)
    return rows


def table(rows: list[FileRow]) -> str:
    out = [
        "| file | request | latency ms | prompt | reused | restored | prefilled | short window "
        "| answer as warm |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        warm = row.asks["warm"].answer
        for phase in PHASES:
            a = row.asks[phase]
            same = "yes" if a.answer == warm else "no"
            out.append(
                f"| {row.name} | {phase} | {a.latency_ms:,.0f} | {a.prompt_tokens:,} | "
                f"{a.reused_tokens:,} | {a.restored_tokens:,} | {a.prefilled_tokens:,} | "
                f"{'yes' if a.short_window else 'no'} | {same} |"
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m spec_lsp.benchmarks.reopen", description=__doc__
    )
    parser.add_argument("sessions", nargs="+", type=Path, help="typing sessions (.jsonl)")
    parser.add_argument("--preset", default="coder")
    parser.add_argument("--kv-folder", type=Path, help="the KV folder (default: a fresh one)")
    parser.add_argument("--init-options", default="{}", help="initializationOptions, JSON")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--log-file", help="the servers' DEBUG log (appended)")
    parser.add_argument("--server-cmd", help="the server's command line (default: spec-lsp serve)")
    parser.add_argument(
        "--settle-s", type=float, default=0.0, help="seconds for a warm-up (0: as the stats say)"
    )
    args = parser.parse_args(argv)
    sessions = [read_session(p) for p in args.sessions]
    options = {"preset": args.preset, **json.loads(args.init_options)}
    with tempfile.TemporaryDirectory(prefix="spec-lsp-reopen-") as scratch:
        folder = args.kv_folder or Path(scratch) / "kv"
        print(f"KV on disk in {folder}", file=sys.stderr)
        cmd = shlex.split(args.server_cmd) if args.server_cmd else default_server_cmd(args.preset)
        if args.log_file:
            cmd += ["--log-level", "DEBUG", "--log-file", args.log_file]
        rows = asyncio.run(run(sessions, cmd, options, folder, args.settle_s))
    print(table(rows))
    if args.json:
        data = {"preset": args.preset, "rows": [asdict(r) for r in rows]}
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
