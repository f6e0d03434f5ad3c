"""Who may write the model cache: this user alone. Torch-free; knows nothing of what is cached.

What the server loads from the cache (`cache_root.cache_dir`) is trusted by a manifest of file stats
(re-hashing 1 GB at each start would cost seconds), and the kernels there are code it runs.
Whoever can write a folder of the cache can put a file beside a manifest that agrees with it, or a
link where the server writes next. So:

- a folder is used only when it and every folder above it up to the cache root (the root
  included; a folder outside the cache: itself) are this user's and neither group nor others can
  write them (`private_folder`, `check_folder`); else `UntrustedCache`, whose message says how to
  fix it. The folders made here are 0700;
- a file is taken only when it is a regular file of this user's that neither group nor others can
  write (`check_file`, on `lstat` or on the `fstat` of what was opened): never a link;
- what is written there is made without following a link: a lock is opened with `O_NOFOLLOW`
  (`open_lock`), anything else is written to a unique name (`mkstemp`: `O_EXCL`) and renamed into
  place (`replace_with`), which replaces a link at that name rather than writing through it.

`uid()` is the one uid every check compares with, so that a test can play a second user.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from spec_lsp.engine.sources.cache_root import cache_dir

FOREIGN_WRITE = stat.S_IWGRP | stat.S_IWOTH


class UntrustedCache(PermissionError):
    """A cache folder or file another user owns or can write, or a link; fit for a user."""


def uid() -> int:
    return os.getuid()


def private_folder(folder: Path) -> Path:
    """`folder`, made where missing (0700, each under a folder checked first), once it and every
    folder up to the cache root are checked (`check_folder`). Raises `UntrustedCache`, or OSError
    where a folder cannot be made."""
    chain = _chain(Path(os.path.abspath(folder)))
    chain[0].mkdir(mode=0o700, parents=True, exist_ok=True)
    check_folder(chain[0], follow=True)  # the root may be a link the user made (~/.cache -> ...)
    for path in chain[1:]:
        path.mkdir(mode=0o700, exist_ok=True)  # a link there: refused just below
        check_folder(path)
    return folder


def trusted_folder(folder: Path) -> bool:
    """Whether `folder` exists and would pass `private_folder`; makes nothing, never raises."""
    try:
        chain = _chain(Path(os.path.abspath(folder)))
        check_folder(chain[0], follow=True)
        for path in chain[1:]:
            check_folder(path)
    except OSError:
        return False
    return True


def check_folder(path: Path, follow: bool = False) -> None:
    """Raises `UntrustedCache` unless `path` is a folder (not a link, unless `follow`) of this
    user's that neither group nor others can write."""
    info = os.stat(path) if follow else os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        kind = "a link" if stat.S_ISLNK(info.st_mode) else "not a folder"
        raise UntrustedCache(
            f"{path} in the model cache is {kind}: it is not used. Remove it (spec-lsp makes the "
            "cache's folders itself)"
        )
    _check_owner_and_mode(path, info)


def check_file(path: Path, info: os.stat_result | None = None) -> os.stat_result:
    """`lstat(path)` (or `info`, the `fstat` of an open file), when it is a regular file of this
    user's that neither group nor others can write; else `UntrustedCache`."""
    info = os.lstat(path) if info is None else info
    if not stat.S_ISREG(info.st_mode):
        kind = "a link" if stat.S_ISLNK(info.st_mode) else "not a regular file"
        raise UntrustedCache(f"{path} in the model cache is {kind}: it is not used. Remove it")
    _check_owner_and_mode(path, info)
    return info


def read_text(path: Path) -> str:
    """The text of a checked file, opened without following a link (a link: OSError)."""
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)) as fh:
        check_file(path, os.fstat(fh.fileno()))
        return fh.read()


def open_lock(path: Path) -> int:
    """A descriptor of the lock file `path`, made 0600 where missing; never through a link (an
    `UntrustedCache`: a link there would make the open create a file at its target)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise UntrustedCache(
            f"{path} in the model cache is a link, not a lock file: it is not used. Remove it"
        ) from exc
    try:
        check_file(path, os.fstat(fd))
    except BaseException:
        os.close(fd)
        raise
    return fd


def replace_with(path: Path, data: bytes) -> None:
    """`path` holds `data`: written to a fresh unique name beside it (0600, `O_EXCL`), fsynced,
    then renamed over it, so a link at `path` is replaced, never written through."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _chain(folder: Path) -> list[Path]:
    """The cache root and each folder below it down to `folder`; `[folder]` outside the cache."""

    root = Path(os.path.abspath(cache_dir()))
    if folder != root and root not in folder.parents:
        return [folder]
    below = [folder, *folder.parents]
    return [root, *reversed(below[: below.index(root)])]


def _check_owner_and_mode(path: Path, info: os.stat_result) -> None:
    if info.st_uid != uid():
        raise UntrustedCache(
            f"{path} belongs to another user (uid {info.st_uid}): the model cache is used only "
            "where you alone can write. Remove it (or ask its owner to), or set SPEC_LSP_CACHE "
            "to a folder of your own"
        )
    if info.st_mode & FOREIGN_WRITE:
        raise UntrustedCache(
            f"{path} can be written by others (mode {stat.S_IMODE(info.st_mode):o}): the model "
            f"cache is used only where you alone can write. `chmod go-w {path}` if everything "
            "in it is yours, else remove it"
        )
