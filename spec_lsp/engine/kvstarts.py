"""The prompt windows' starts, kept beside the KV blocks on disk (`kvdisk`).

A document's blocks match only a prompt that starts as the stored one did, and where a file's
prompt window starts is the prompt builder's choice (`prompt.PromptBuilder`), made at the cursor
and then kept while typing moves it down: a server that restarted would choose afresh, elsewhere.
So the server keeps each document's start (its line number, a digest of that line's text and one
of its PSM anchor, by document URI: `prompt.Kept`) in one file of the KV folder when it shuts
down, and the next server takes them at its clients' `initialize` (`Planner.seed_window_starts`).
The file is a `kvfiles` one (private folder, checksummed, written whole or not at all); the newest
`MAX_STARTS` are kept. Torch-free: the server reads it before any model is loaded. Nothing here
raises into its caller.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from spec_lsp.engine.kvfiles import BlockFolder, folder
from spec_lsp.engine.options import EngineOptions

log = logging.getLogger(__name__)

NAME = "window-starts"  # the file's name in the folder (block names are sha256 hex: no clash)
HEADER = {"kind": "window-starts", "version": 1}
MAX_STARTS = 1024  # documents (the newest kept)
MAX_BYTES = 4 * 2**20  # of the kept budget: a file of starts is never larger

# document URI -> (start line, its text's digest, its anchor's: "" for none); `prompt.Kept`
Starts = dict[str, tuple[int, str, str]]


def _folder(options: Any) -> BlockFolder | None:
    options = options or EngineOptions()
    path = folder(options)
    if path is None:
        return None
    files = BlockFolder(path, int(options.kv_disk_mb * 2**20))
    return files if files.usable else None


def _read(files: BlockFolder) -> Starts:
    payload = files.read(NAME, HEADER)
    if payload is None:
        return {}
    out: Starts = {}
    for uri, value in json.loads(payload.decode()).items():
        if not isinstance(value, list) or len(value) not in (2, 3):
            continue
        start, head, anchor = (*value, "")[:3]  # a file of before the anchors: none
        if isinstance(start, int) and isinstance(head, str) and isinstance(anchor, str):
            out[uri] = (start, head, anchor)
    return out


def load(options: Any = None) -> Starts:
    """The starts kept ({} when none, KV on disk is off, or the file fails a check)."""
    try:
        files = _folder(options)
        return _read(files) if files is not None else {}
    except Exception as exc:  # the windows start afresh
        log.warning("window starts not read: %s", exc)
        return {}


def save(starts: Starts, options: Any = None) -> bool:
    """Keeps `starts` (the newest last) over those kept, the newest `MAX_STARTS`: whether they
    were written (not when KV on disk is off, or on a failure, logged)."""
    try:
        files = _folder(options)
        if files is None:
            return False
        try:
            merged = _read(files)
        except Exception:  # a file that cannot be read is written anew
            merged = {}
        for uri, value in starts.items():
            merged.pop(uri, None)
            merged[uri] = value
        kept = dict(list(merged.items())[-MAX_STARTS:])
        payload = json.dumps(kept).encode()
        if len(payload) > MAX_BYTES:
            return False
        files.write(NAME, HEADER, payload, time.time_ns())
        return True
    except Exception as exc:
        log.warning("window starts not kept: %s", exc)
        return False
