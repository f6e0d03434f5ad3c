"""`bench repo`'s rows from the real server: `spec-lsp serve` over stdio, driven as an editor.

One server for the whole run (the model loads once: minutes on a busy two-core machine), started
with every package's folder as a workspace folder (`rootUri` their common parent) and the first
row's settings in `initializationOptions`. Package by package, the rows run one after the other
(all the package's holes per row, so a run cut short has every row of the packages it did), each
row's settings sent as a `workspace/didChangeConfiguration`, as an editor sends a changed
setting. The rows run from the most context to the least: the first (all settings on) starts the
server with its workspace index built from the start; where `definitions` turns on again (the
next package's first row) the bench waits `INDEX_WAIT_S` for the index to be rebuilt. The index
holds all the packages at once: a name that two packages define at their top level can resolve
to the other package's (an import that resolves to a file of the same package is not affected).

| row                 | crossFile | definitions | editContext |
|---------------------|-----------|-------------|-------------|
| `definitions_edits` | on        | on          | on          |
| `definitions`       | on        | on          | off         |
| `definitions_only`  | off       | on          | off         |
| `ring`              | on        | off         | off         |
| `in_file`           | off       | off         | off         |

At each hole (`repo_editor`): the other files opened, the hole's file opened at the hole, for
the edits row the two recent edits typed as didChange notifications, then one
`textDocument/inlineCompletion` at the cursor with `triggerKind` Invoked (as a person who asks
for a suggestion), then every file closed, so each request sees the same editor state and no
answer of an earlier row is reused. The answer is the first item's text from the cursor on (an
item whose range starts before the cursor repeats what is there; that part is dropped).

It speaks LSP only, through the replayer's client; it knows nothing of the server's insides.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from spec_lsp.benchmarks.repo_editor import context_files, edit_plan, language_id, opened
from spec_lsp.benchmarks.repo_holes import RepoHole, read
from spec_lsp.benchmarks.repo_packages import PackageTree
from spec_lsp.replay.client import LspClient
from spec_lsp.replay.document import offset_of, position_of
from spec_lsp.replay.handshake import client_capabilities, wait_ready

ROWS: dict[str, dict[str, bool]] = {
    "definitions_edits": {"crossFile": True, "definitions": True, "editContext": True},
    "definitions": {"crossFile": True, "definitions": True, "editContext": False},
    "definitions_only": {"crossFile": False, "definitions": True, "editContext": False},
    "ring": {"crossFile": True, "definitions": False, "editContext": False},
    "in_file": {"crossFile": False, "definitions": False, "editContext": False},
}
INVOKED = 1
LOAD_TIMEOUT_S = 900.0  # the coder pair on a busy two-core machine
REQUEST_TIMEOUT_S = 600.0
INDEX_WAIT_S = 5.0  # the packages' index, rebuilt in the background: < 1 s on a quiet machine


@dataclass(frozen=True)
class Asked:
    """One request's answer (the text from the cursor on) and its latency."""

    answer: str
    latency_ms: float


def file_uri(root: Path, path: str) -> str:
    return (root / path).resolve().as_uri()


def answer_text(result: Any, document: str, offset: int) -> str:
    """The first inline item's text from the cursor (`offset` in `document`) on; "" for none."""
    items = result.get("items", []) if isinstance(result, dict) else result or []
    if not items:
        return ""
    item = items[0]
    text = item.get("insertText", "")
    text = text.get("value", "") if isinstance(text, dict) else str(text)
    span = item.get("range")
    if span:
        start = offset_of(document, int(span["start"]["line"]), int(span["start"]["character"]))
        if start < offset and text.startswith(document[start:offset]):
            text = text[offset - start :]
    return text


async def initialize(client: LspClient, roots: list[Path], options: dict[str, Any]) -> None:
    """`initialize` as an editor that opened folders `roots` sends it, then `initialized`."""
    folders = [root.resolve() for root in roots]
    parent = Path(os.path.commonpath(folders)) if folders else Path.cwd()
    params = {
        "processId": os.getpid(),
        "clientInfo": {"name": "spec-lsp-bench-repo", "version": "1"},
        "rootUri": parent.as_uri(),
        "workspaceFolders": [{"uri": f.as_uri(), "name": f.name} for f in folders],
        "capabilities": client_capabilities("utf-16"),
        "initializationOptions": options,
    }
    await client.request("initialize", params, timeout=120.0)
    client.notify("initialized", {})
    await client.drain()


async def ask(
    client: LspClient,
    source: PackageTree,
    hole: RepoHole,
    texts: dict[str, str],
    edits_on: bool,
    open_files: int,
) -> Asked:
    """The editor's state at `hole` built, one Invoked request, everything closed again."""
    document = hole.document(texts[hole.path])
    files = context_files(source, hole, open_files)
    edits = edit_plan(hole, texts, document) if edits_on else []
    docs = opened(files, texts, hole, document, edits)
    versions: dict[str, int] = {}
    for doc in docs:
        versions[doc.path] = 1
        item = {
            "uri": file_uri(source.root, doc.path),
            "languageId": language_id(doc.path),
            "version": 1,
        }
        client.notify("textDocument/didOpen", {"textDocument": item | {"text": doc.text}})
    for edit in edits:
        versions[edit.path] += 1
        at = {"line": edit.line, "character": 0}
        change = {"range": {"start": at, "end": at}, "text": edit.text}
        doc_id = {"uri": file_uri(source.root, edit.path), "version": versions[edit.path]}
        client.notify(
            "textDocument/didChange", {"textDocument": doc_id, "contentChanges": [change]}
        )
    params = {
        "textDocument": {"uri": file_uri(source.root, hole.path)},
        "position": position_of(document, hole.start),
        "context": {"triggerKind": INVOKED, "selectedCompletionInfo": None},
    }
    start = time.perf_counter()
    result = await client.request("textDocument/inlineCompletion", params, REQUEST_TIMEOUT_S)
    ms = (time.perf_counter() - start) * 1000
    for doc in docs:
        close = {"textDocument": {"uri": file_uri(source.root, doc.path)}}
        client.notify("textDocument/didClose", close)
    return Asked(answer_text(result, document, hole.start), ms)


async def configure(client: LspClient, options: dict[str, Any], was: str, row: str) -> None:
    """The row's settings sent as a changed configuration; when that turns `definitions` on,
    a pause of `INDEX_WAIT_S` for the index to be built again (the server says nothing of it)."""
    settings = {"specLsp": options | ROWS[row]}
    client.notify("workspace/didChangeConfiguration", {"settings": settings})
    if ROWS[row]["definitions"] and not ROWS[was]["definitions"]:
        await asyncio.sleep(INDEX_WAIT_S)


async def all_rows(
    work: list[tuple[PackageTree, list[RepoHole]]],
    rows: list[str],
    server_cmd: list[str],
    options: dict[str, Any],
    log: IO[bytes],
    done: Callable[[str, RepoHole, Asked], None],
    open_files: int,
) -> list[str]:
    """Every row's answers at every hole, from one server, each told to `done(row, hole,
    asked)` as it comes; the messages the server showed."""
    texts = {s.label: {p: read(s.root, p) for p in s.code} for s, _ in work}
    client = LspClient(server_cmd, log)
    await client.start()
    try:
        await initialize(client, [source.root for source, _ in work], options | ROWS[rows[0]])
        await wait_ready(client, LOAD_TIMEOUT_S)
        current = rows[0]
        for source, holes in work:
            for row in rows:
                if row != current:
                    await configure(client, options, current, row)
                    current = row
                edits_on = ROWS[row]["editContext"]
                for hole in holes:
                    asked = await ask(
                        client, source, hole, texts[source.label], edits_on, open_files
                    )
                    done(row, hole, asked)
    finally:
        messages = list(client.messages)
        await client.stop(timeout=30.0)
    return messages
