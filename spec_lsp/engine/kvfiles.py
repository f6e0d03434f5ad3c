"""A private folder of KV block files: who may use it, the file format, atomic writes, verified
reads and a byte budget (`BlockFolder`).

Trust, as for the kernels' folder (`native/library.py`): the folder is the user's and 0700; one
owned by someone else, writable by group or others, or a symlink is refused with a warning (and
checked again at every use). Every file is opened relative to the folder's descriptor without
following symlinks; written 0600 under a fresh name (O_EXCL, as mkstemp makes one) in the same
folder and renamed into place, so a reader sees a whole file or none. A file is `MAGIC`, the
header's length, a JSON header, then the payload's raw bytes (never pickled); a read checks the
header against what the caller expects, the payload's size and its sha256, and deletes a file that
fails (corrupt, truncated, another format). The budget holds by deleting the least recently used
files (by modification time, which the caller sets on every use: `touch`).

Knows nothing of models, caches or what the bytes mean: names, headers and payloads are the
caller's (`kvdisk`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
import stat
import struct
import time
from pathlib import Path
from typing import Any

from spec_lsp.engine.sources.cache_root import cache_dir

log = logging.getLogger(__name__)

FORMAT = 1
MAGIC = b"speclskv"
SUFFIX = ".kv"
MAX_HEADER = 2**20  # bytes: a block's header is a few kB (its token ids)
STALE_TMP_S = 3600  # a temporary file this old was left by a writer that died
_LENGTH = struct.Struct("<I")
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def folder(options: Any) -> Path | None:
    """Where `options` keep KV on disk: `kv_disk_dir`, else what the environment's
    `SPEC_LSP_KV_DISK` says (`off`: nowhere, as in the test suite; a folder's path: there),
    else `<cache root>/kv`; None when off."""
    if options.kv_disk_mb <= 0:
        return None
    if options.kv_disk_dir:
        return Path(options.kv_disk_dir)
    env = os.environ.get("SPEC_LSP_KV_DISK", "")
    if env.lower() in ("off", "0", "no", "false"):
        return None
    if env and env.lower() not in ("on", "1", "yes", "true"):
        return Path(env).expanduser()
    return cache_dir() / "kv"


def untrusted(info: os.stat_result) -> str | None:
    """Why a folder or file with this stat may not be used (None: it may)."""
    if info.st_uid != os.getuid():
        return f"belongs to another user (uid {info.st_uid})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by others (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def open_private(path: Path) -> int | None:
    """A descriptor of the folder `path` (made 0700 where missing), or None with a warning: not a
    folder, a symlink, another user's or writable by others."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not path.is_symlink():
            path.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW)
    except OSError as exc:
        log.warning("KV folder %s unusable (%s): KV is not kept on disk", path, exc)
        return None
    why = untrusted(os.fstat(fd))
    if why is not None:
        log.warning("KV folder %s %s: KV is not kept on disk", path, why)
        os.close(fd)
        return None
    if stat.S_IMODE(os.fstat(fd).st_mode) != 0o700:
        os.fchmod(fd, 0o700)  # the user's and written by them only: now read by them only too
    return fd


class BlockFolder:
    """Named files of a JSON header and raw bytes in a private folder, within `budget` bytes."""

    def __init__(self, path: Path, budget: int) -> None:
        self.path, self.budget = path, budget
        self._dir = open_private(path)

    @property
    def usable(self) -> bool:
        """Whether the folder is open and still the user's alone (checked at every use)."""
        if self._dir is None:
            return False
        why = untrusted(os.fstat(self._dir))
        if why is not None:
            log.warning("KV folder %s %s now: KV is no longer kept on disk", self.path, why)
            self._dir = None
        return self._dir is not None

    def touch(self, name: str, mtime_ns: int) -> bool:
        """Marks file `name` as used at `mtime_ns`; False when there is none."""
        try:
            os.utime(
                name + SUFFIX, ns=(mtime_ns, mtime_ns), dir_fd=self._dir, follow_symlinks=False
            )
            return True
        except FileNotFoundError:
            return False

    def has(self, name: str) -> bool:
        """Whether file `name` is there (not read, not checked)."""
        try:
            os.stat(name + SUFFIX, dir_fd=self._dir, follow_symlinks=False)
            return True
        except OSError:
            return False

    def read(self, name: str, expect: dict[str, Any]) -> bytearray | None:
        """The payload of file `name`, checked: its header holds `expect`'s items (`bytes`: the
        payload's size) and the payload its sha256. None when there is none; a file that fails
        a check is deleted."""
        got = self._load(name, expect)
        if isinstance(got, str):
            log.warning("KV file %s: %s; deleted", self.path / (name + SUFFIX), got)
            with contextlib.suppress(OSError):
                os.unlink(name + SUFFIX, dir_fd=self._dir)
            return None
        return got

    def header(self, name: str) -> dict[str, Any] | None:
        """The header of file `name`, its payload neither read nor checked (a lookup: `read`
        checks both); None when there is none or it cannot be read."""
        try:
            fd = os.open(name + SUFFIX, os.O_RDONLY | _NOFOLLOW, dir_fd=self._dir)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as f:
            got = _header(f, fd)
        return got if isinstance(got, dict) else None

    def _load(self, name: str, expect: dict[str, Any]) -> bytearray | str | None:
        """The payload of file `name`, or why it fails a check, or None when there is none."""
        try:
            fd = os.open(name + SUFFIX, os.O_RDONLY | _NOFOLLOW, dir_fd=self._dir)
        except FileNotFoundError:
            return None
        except OSError as exc:  # a symlink (ELOOP): not ours to follow
            return str(exc)
        with os.fdopen(fd, "rb") as f:
            header = _header(f, fd)
            if isinstance(header, str):
                return header
            try:
                if any(header[k] != v for k, v in {"format": FORMAT, **expect}.items()):
                    return "another format, identity, tokens or size"
                size = int(header["bytes"])
            except (KeyError, TypeError, ValueError):
                return "a corrupt header"
            if size < 0:
                return "a corrupt header"
            payload = bytearray(size)
            if f.readinto(payload) != len(payload) or f.read(1):
                return "a truncated or overlong payload"
        if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
            return "a checksum mismatch"
        return payload

    def write(self, name: str, header: dict[str, Any], payload: Any, mtime_ns: int) -> None:
        """File `name`: `header` (with the format, the payload's size and sha256) and `payload`
        (bytes or any buffer), used at `mtime_ns`; written whole or not at all."""
        data = memoryview(payload).cast("B")
        digest = hashlib.sha256(data).hexdigest()
        blob = json.dumps({**header, "format": FORMAT, "bytes": data.nbytes, "sha256": digest})
        tmp = f".tmp-{secrets.token_hex(8)}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
        fd = os.open(tmp, flags, 0o600, dir_fd=self._dir)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + _LENGTH.pack(len(blob)) + blob.encode())
                f.write(data)
                f.flush()
                os.utime(f.fileno(), ns=(mtime_ns, mtime_ns))
            os.replace(tmp, name + SUFFIX, src_dir_fd=self._dir, dst_dir_fd=self._dir)
        except BaseException:
            os.unlink(tmp, dir_fd=self._dir)
            raise

    def bound(self) -> None:
        """Deletes the least recently used files until the folder is within its budget, and
        temporary files a writer that died left behind."""
        files, total, now = [], 0, time.time()
        with os.scandir(self._dir) as entries:  # type: ignore[type-var]
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                if entry.name.startswith(".tmp-") and now - info.st_mtime > STALE_TMP_S:
                    os.unlink(entry.name, dir_fd=self._dir)
                elif entry.name.endswith(SUFFIX):
                    files.append((info.st_mtime_ns, entry.name, info.st_size))
                    total += info.st_size
        for _, name, size in sorted(files):
            if total <= self.budget:
                break
            with contextlib.suppress(FileNotFoundError):  # another server's eviction was first
                os.unlink(name, dir_fd=self._dir)
            total -= size


def _header(f: Any, fd: int) -> dict[str, Any] | str:
    """The JSON header of an open block file (the position after it), or why it has none."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or untrusted(info):
        return "not a private regular file"
    head = f.read(len(MAGIC) + _LENGTH.size)
    if len(head) < len(MAGIC) + _LENGTH.size or not head.startswith(MAGIC):
        return "no header"
    (length,) = _LENGTH.unpack(head[len(MAGIC) :])
    try:
        header = json.loads(f.read(min(length, MAX_HEADER)))
    except ValueError:
        return "a corrupt header"
    return header if isinstance(header, dict) else "a corrupt header"
