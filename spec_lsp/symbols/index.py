"""The workspace symbol index: each file's tags (`syntax.tagger`), and which files define a name.

Built in the background from the workspace's roots (`start`: one daemon thread, within `BUILD_S`
and `MAX_FILES`; `walk.source_files` decides which files), then kept current one file at a time:
an open document's text as it is edited (`update`), a saved or changed file from disk (`read`), a
deleted one (`remove`). Bounded: `MAX_FILES` files and `MAX_TAGS` tags in all; past those, a new
file is not indexed (an open document's update still replaces its own entry).

Only admitted files enter it (`admits(path)`: the caller says no for private and excluded files),
and a file no longer admitted (the options changed) goes at `refilter`. Paths are absolute file
system paths. Thread-safe: the builder thread and the event loop share it under one lock, and
parsing happens outside it.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from spec_lsp.symbols.walk import MAX_FILE_BYTES, source_files
from spec_lsp.syntax.tagger import Parsed, edited_tags, tagged_language
from spec_lsp.syntax.tags import FileTags

MAX_FILES = 20_000
MAX_TAGS = 400_000
BUILD_S = 60.0  # the background build stops after this long (what it indexed stays)
MAX_TREES = 16  # open documents whose last tree is kept, to parse their next version from it


@dataclass
class BuildReport:
    files: int = 0
    tags: int = 0
    seconds: float = 0.0
    complete: bool = False  # False: stopped by a bound (time, files, tags) or by `stop`


@dataclass
class _State:
    files: dict[str, FileTags] = field(default_factory=dict)
    defining: dict[str, set[str]] = field(default_factory=dict)  # name -> files (top level)
    tags: int = 0


class SymbolIndex:
    def __init__(self, admits: Callable[[str], bool] = lambda _path: True) -> None:
        self.admits = admits
        self.roots: tuple[str, ...] = ()
        self._state = _State()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._trees: OrderedDict[str, Parsed] = OrderedDict()  # `update(..., keep_tree=True)`
        self.report = BuildReport()
        self.built = threading.Event()  # set when a build ends (complete or not)

    # -- reading ------------------------------------------------------------------------------
    def tags(self, path: str) -> FileTags | None:
        with self._lock:
            return self._state.files.get(path)

    def defining(self, name: str) -> list[str]:
        """The files whose top level defines `name` (a class, function or type), sorted."""
        with self._lock:
            return sorted(self._state.defining.get(name, ()))

    def files_in(self, folder: str) -> list[str]:
        """The indexed files right in `folder` (not below), sorted."""
        with self._lock:
            return sorted(p for p in self._state.files if os.path.dirname(p) == folder)

    def has(self, path: str) -> bool:
        with self._lock:
            return path in self._state.files

    def __len__(self) -> int:
        with self._lock:
            return len(self._state.files)

    # -- changes ------------------------------------------------------------------------------
    def update(self, path: str, text: str, language: str = "", keep_tree: bool = False) -> bool:
        """Indexes `text` as the file `path` (in `language`, else from its name); False when it
        is not admitted, not of a tagged language, or the index is full. `keep_tree`: an open
        document, edited again soon: its tree is kept (`MAX_TREES` documents), and its next
        version is parsed from it incrementally."""
        language = language or path
        if not self.admits(path) or not tagged_language(language):
            self.remove(path)
            return False
        with self._lock:
            before = self._trees.pop(path, None)
        tags, parsed = edited_tags(language, text, before)
        with self._lock:
            if keep_tree and parsed is not None:
                self._trees[path] = parsed
                while len(self._trees) > MAX_TREES:
                    self._trees.popitem(last=False)
            state = self._state
            known = path in state.files
            full = len(state.files) >= MAX_FILES or state.tags + len(tags.tags) > MAX_TAGS
            if full and not known:
                return False
            self._drop(path)
            state.files[path] = tags
            state.tags += len(tags.tags)
            for tag in tags.tags:
                if not tag.container:
                    state.defining.setdefault(tag.name, set()).add(path)
        return True

    def read(self, path: str) -> bool:
        """Indexes the file `path` as it is on disk (gone or unreadable: removed)."""
        try:
            if os.path.getsize(path) > MAX_FILE_BYTES:
                self.remove(path)
                return False
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            self.remove(path)
            return False
        return self.update(path, text)

    def remove(self, path: str) -> None:
        """Forgets the file `path`, or every file under it when it is a folder."""
        with self._lock:
            under = path.rstrip("/") + "/"
            for gone in [p for p in self._state.files if p == path or p.startswith(under)]:
                self._drop(gone)
                self._trees.pop(gone, None)

    def refilter(self) -> None:
        """Drops the files no longer admitted (a private pattern added)."""
        with self._lock:
            paths = list(self._state.files)
        for path in paths:
            if not self.admits(path):
                self.remove(path)

    def _drop(self, path: str) -> None:  # under the lock
        state = self._state
        old = state.files.pop(path, None)
        if old is None:
            return
        state.tags -= len(old.tags)
        for tag in old.tags:
            holders = state.defining.get(tag.name)
            if holders is not None and not tag.container:
                holders.discard(path)
                if not holders:
                    del state.defining[tag.name]

    # -- building -----------------------------------------------------------------------------
    def build(self, roots: Iterable[str], budget_s: float = BUILD_S) -> BuildReport:
        """Indexes the files of `roots` (in this thread), within `budget_s` seconds."""
        started = time.perf_counter()
        report = BuildReport()
        for root in roots:
            for path in source_files(root, self.admits, MAX_FILES):
                if self._stop.is_set() or time.perf_counter() - started > budget_s:
                    report.seconds = time.perf_counter() - started
                    return report
                if not self.has(path) and self.read(path):
                    report.files += 1
        report.seconds = time.perf_counter() - started
        report.complete = True
        with self._lock:
            report.tags = self._state.tags
        return report

    def start(self, roots: Iterable[str], budget_s: float = BUILD_S) -> None:
        """Builds from `roots` on a daemon thread (a build already running is stopped first)."""
        self.stop()
        self.roots = tuple(os.path.abspath(r) for r in roots)
        self._stop.clear()
        self.built.clear()

        def run() -> None:
            try:
                self.report = self.build(self.roots, budget_s)
            finally:
                self.built.set()

        self._thread = threading.Thread(target=run, name="spec-lsp-symbols", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
