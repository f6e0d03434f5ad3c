"""The model cache (issue 27 item 4): an entry is built under a lock into a temporary folder of
its own and renamed into place with a manifest of sizes and sha256; at load, a truncated or
changed file is found and the entry rebuilt, and an entry that fails to load is rebuilt once."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
import torch

from spec_lsp.engine import from_source
from spec_lsp.engine.sources import cache_entry
from spec_lsp.engine.sources.cache_entry import MANIFEST, agrees, built, load

pytestmark = pytest.mark.timeout(60)


class Builder:
    """Writes two files; counts its builds and remembers the folders it was given."""

    def __init__(self) -> None:
        self.folders: list[Path] = []

    def __call__(self, folder: Path) -> None:
        self.folders.append(folder)
        (folder / "weights.bin").write_bytes(bytes(range(256)) * 64)
        (folder / "sub").mkdir()
        (folder / "sub" / "config.json").write_text('{"layers": 2}')


def test_an_entry_is_built_beside_its_place_then_renamed_with_its_manifest(tmp_path: Path) -> None:
    entry, build = tmp_path / "model", Builder()
    assert built(entry, build, stamp="v1") == entry
    (folder,) = build.folders
    assert folder.parent == tmp_path and folder.name.startswith(".model.") and not folder.exists()
    manifest = json.loads((entry / MANIFEST).read_text())
    assert manifest["stamp"] == "v1" and set(manifest["files"]) == {
        "weights.bin",
        "sub/config.json",
    }
    assert manifest["files"]["weights.bin"]["size"] == 256 * 64
    assert built(entry, build, stamp="v1") == entry and len(build.folders) == 1  # kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "model.lock"]


def test_a_truncated_cache_file_is_rebuilt(tmp_path: Path) -> None:
    entry, build = tmp_path / "model", Builder()
    built(entry, build)
    with (entry / "weights.bin").open("r+b") as fh:
        fh.truncate(1000)  # a copy cut short, a full disk
    assert not agrees(entry)
    built(entry, build)
    assert len(build.folders) == 2 and (entry / "weights.bin").stat().st_size == 256 * 64


def test_a_changed_file_of_the_same_size_is_found_by_its_hash(tmp_path: Path) -> None:
    entry, build = tmp_path / "model", Builder()
    built(entry, build)
    os.utime(entry / "weights.bin", ns=(1, 1))  # touched, its bytes right: hashed, and passes
    assert agrees(entry)
    (entry / "weights.bin").write_bytes(bytes(256 * 64))  # same size, other bytes
    assert not agrees(entry)
    built(entry, build)
    assert agrees(entry) and len(build.folders) == 2


def test_a_stale_stamp_or_a_missing_manifest_rebuilds(tmp_path: Path) -> None:
    entry, build = tmp_path / "model", Builder()
    built(entry, build, stamp="size-mtime-1")
    built(entry, build, stamp="size-mtime-2")  # the source file changed
    (entry / MANIFEST).unlink()  # an entry from before manifests
    built(entry, build, stamp="size-mtime-2")
    assert len(build.folders) == 3


def test_the_leftovers_of_a_killed_build_are_removed(tmp_path: Path) -> None:
    (tmp_path / ".model.k1ll3d").mkdir()
    (tmp_path / ".model.k1ll3d" / "half.bin").write_bytes(b"x")
    built(tmp_path / "model", Builder())
    assert not (tmp_path / ".model.k1ll3d").exists()


def test_an_entry_that_fails_to_load_is_rebuilt_once(tmp_path: Path) -> None:
    entry, build, reads = tmp_path / "model", Builder(), []

    def read_once_bad(folder: Path) -> int:
        reads.append(folder)
        if len(reads) == 1:
            raise ValueError("header too short")  # as safetensors says of a bad file
        return (folder / "weights.bin").stat().st_size

    assert load(entry, build, read_once_bad) == 256 * 64
    assert (len(build.folders), len(reads)) == (2, 2)

    def always_bad(folder: Path) -> int:
        raise ValueError("still bad")

    with pytest.raises(ValueError, match="still bad"):
        load(entry, build, always_bad)
    assert len(build.folders) == 3  # once more, not forever


def test_two_builders_of_one_entry_build_it_once(tmp_path: Path) -> None:
    """The second waits on the first's lock (it says so), then finds the entry built."""
    entry, build = tmp_path / "model", Builder()
    second_waits = threading.Event()

    def slow_build(folder: Path) -> None:
        assert second_waits.wait(20)  # the other builder is blocked on the lock by now
        build(folder)

    def progress(message: str, _fraction: float) -> None:
        if message.startswith("waiting for another process"):
            second_waits.set()

    first = threading.Thread(target=built, args=(entry, slow_build))
    first.start()
    while not (tmp_path / "model.lock").exists() or not list(tmp_path.glob(".model.*")):
        threading.Event().wait(0.01)  # the first holds the lock and builds
    assert built(entry, slow_build, progress=progress) == entry
    first.join(20)
    assert len(build.folders) == 1 and agrees(entry)


def test_the_bundled_models_cache_is_rebuilt_when_truncated_or_unloadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through `from_source.load_model`, with a tiny model standing in for the 17-s conversion."""
    monkeypatch.setenv("SPEC_LSP_CACHE", str(tmp_path))
    builds: list[Path] = []

    def tiny_builder(name: str, progress: object) -> object:
        def build(folder: Path) -> None:
            builds.append(folder)
            from_source.tiny_model(1, seed=3, vocab_size=64).save_pretrained(folder)

        return build

    monkeypatch.setattr(from_source, "_bundled_builder", tiny_builder)
    source = "bundled:smollm2-135m-instruct"
    assert from_source.load_model(source, "cpu", torch.float32).config.vocab_size == 64
    weights = from_source.bundled_dir("smollm2-135m-instruct") / "model.safetensors"
    with weights.open("r+b") as fh:
        fh.truncate(weights.stat().st_size // 2)
    assert from_source.load_model(source, "cpu", torch.float32).config.vocab_size == 64
    assert len(builds) == 2
    size = weights.stat().st_size  # bytes that do not parse, with a manifest that agrees
    weights.write_bytes(b"\xff" * size)
    cache_entry.write_manifest(weights.parent, "")
    assert from_source.load_model(source, "cpu", torch.float32).config.vocab_size == 64
    assert len(builds) == 3
