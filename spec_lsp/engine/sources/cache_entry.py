"""One entry of the user's model cache: a folder built once, checked at every load. Torch-free.

What the converted bundled model, a GGUF file's tokenizer and its quantized blocks keep in
`~/.cache/spec-lsp` (`cache_root.cache_dir`) is made here, with the guarantees `fetch` gives the
GGUF files themselves, and its own helpers (the lock, the sha256, the clean-up of leftovers):

- one builder at a time: an exclusive `flock` on `<entry>.lock` (a second process waits, then
  finds the entry built);
- built into a temporary folder of a unique name beside the entry (`.<entry>.<random>`), its
  manifest (each file's size and sha256, and the `stamp` of what it was built from) written
  last and fsynced, then renamed into place: a half-built entry is never seen under its name;
- checked at each load against the manifest: sizes always, sha256 again only for a file whose
  stat (mtime, inode) changed since (re-hashing 500 MB at each start would cost seconds). A
  missing, truncated or changed file, a stale stamp or no manifest: the entry is built again;
- `load`: an entry whose files fail to load all the same is removed and built again, once; a
  second failure is the caller's error;
- trusted only where the user alone can write (`engine.ownership`): a folder above the entry that
  another user owns or can write is refused with a message; an entry folder, file or manifest
  that is a link, or not the user's alone, does not agree, and the entry is built again.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from spec_lsp.engine.sources import ownership
from spec_lsp.engine.sources.fetch import Progress
from spec_lsp.engine.sources.fetch import (
    _locked as locked,  # fetch's own helpers, shared on purpose
)
from spec_lsp.engine.sources.fetch import _remove_stale as remove_leftovers
from spec_lsp.engine.sources.fetch import _sha256 as sha256

log = logging.getLogger(__name__)
T = TypeVar("T")
MANIFEST = ".manifest.json"
VERSION = 1


def built(
    entry: Path, build: Callable[[Path], None], stamp: str = "", progress: Progress | None = None
) -> Path:
    """The folder `entry`, verified; `build(folder)` fills a fresh one when it is missing or bad.
    Raises `ownership.UntrustedCache` where another user owns or can write a folder above it."""
    ownership.private_folder(entry.parent)
    with locked(entry, progress):
        if agrees(entry, stamp):
            return entry
        remove(entry)
        tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", dir=entry.parent))
        try:
            build(tmp)
            write_manifest(tmp, stamp)
            os.replace(tmp, entry)
            _fsync(entry.parent)  # the rename survives a crash
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return entry


def load(
    entry: Path,
    build: Callable[[Path], None],
    read: Callable[[Path], T],
    stamp: str = "",
    progress: Progress | None = None,
) -> T:
    """`read(folder)` of the built entry; if it raises, the entry is removed, built and read once
    more (what the second read raises goes to the caller)."""
    folder = built(entry, build, stamp, progress)
    try:
        return read(folder)
    except Exception as exc:  # noqa: BLE001 - any failure to load means the entry is bad
        log.warning("%s failed to load (%s: %s): building it again", entry, type(exc).__name__, exc)
        if progress:
            progress(f"{entry.name} in the cache failed to load: building it again", 0.0)
        with locked(entry, progress):
            remove(entry)
    return read(built(entry, build, stamp, progress))


def agrees(entry: Path, stamp: str = "") -> bool:
    """The entry's files are those its manifest lists (see the module docstring); never raises."""
    try:
        ownership.check_folder(entry)
        manifest = json.loads(ownership.read_text(entry / MANIFEST))
        files = manifest["files"]
        if manifest.get("version") != VERSION or manifest.get("stamp") != stamp or not files:
            return False
        return all(_file_agrees(entry, name, want) for name, want in files.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def remove(entry: Path) -> None:
    """The entry and the leftovers of killed builds beside it (call it under the lock)."""
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry)
    else:
        entry.unlink(missing_ok=True)
    remove_leftovers(entry)


def _file_agrees(entry: Path, name: str, want: dict[str, object]) -> bool:
    for folder in Path(name).parents[:-1]:  # `sub/config.json`: `sub` too
        ownership.check_folder(entry / folder)
    path = entry / name
    st = ownership.check_file(path)  # the user's own regular file: no link, no other writer
    if st.st_size != want["size"]:
        return False
    if (st.st_mtime_ns, st.st_ino) == (want["mtime_ns"], want["inode"]):
        return True
    return sha256(path) == want["sha256"]  # touched or copied: the bytes decide


def write_manifest(folder: Path, stamp: str) -> None:
    """Each file's size, sha256 and stat, after taking others' write bits off what the build
    made (whatever the umask), written new (`O_EXCL | O_NOFOLLOW`), 0600, and fsynced."""
    for path in folder.rglob("*"):
        if not path.is_symlink():
            path.chmod(stat.S_IMODE(path.stat().st_mode) & ~ownership.FOREIGN_WRITE)
    files = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        _fsync(path)
        st = path.stat()
        files[path.relative_to(folder).as_posix()] = {
            "size": st.st_size,
            "sha256": sha256(path),
            "mtime_ns": st.st_mtime_ns,
            "inode": st.st_ino,
        }
    (folder / MANIFEST).unlink(missing_ok=True)  # a link there goes, its target untouched
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(folder / MANIFEST, flags, 0o600), "w") as fh:
        json.dump({"version": VERSION, "stamp": stamp, "files": files}, fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
