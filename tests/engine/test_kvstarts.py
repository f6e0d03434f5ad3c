"""spec_lsp/engine/kvstarts.py: the prompt windows' starts kept beside the KV blocks."""

from __future__ import annotations

from pathlib import Path

import pytest

from spec_lsp.engine import kvfiles, kvstarts
from spec_lsp.engine.options import EngineOptions


def _options(tmp_path: Path) -> EngineOptions:
    return EngineOptions(kv_disk_dir=str(tmp_path / "kv"))


def test_starts_are_kept_merged_newest_last_and_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = _options(tmp_path)
    assert kvstarts.load(options) == {}
    a, b = (120, "ab" * 8, "40:" + "12" * 8), (7, "cd" * 8, "")
    assert kvstarts.save({"file:///a.py": a, "file:///b.py": b}, options)
    assert kvstarts.save({"file:///a.py": (130, "ef" * 8, "")}, options)  # a.py again: newest
    assert list(kvstarts.load(options).items()) == [
        ("file:///b.py", b),
        ("file:///a.py", (130, "ef" * 8, "")),
    ]
    monkeypatch.setattr(kvstarts, "MAX_STARTS", 2)
    assert kvstarts.save({"file:///c.py": (1, "00" * 8, "")}, options)
    assert list(kvstarts.load(options)) == ["file:///a.py", "file:///c.py"]


def test_off_a_damaged_file_or_bad_entries_give_no_starts(tmp_path: Path) -> None:
    off = EngineOptions(kv_disk_dir=str(tmp_path / "kv"), kv_disk_mb=0)
    one = {"file:///a.py": (1, "00" * 8, "")}
    assert not kvstarts.save(one, off) and kvstarts.load(off) == {}
    options = _options(tmp_path)
    assert kvstarts.save(one, options)
    path = tmp_path / "kv" / (kvstarts.NAME + kvfiles.SUFFIX)
    data = bytearray(path.read_bytes())
    data[-2] ^= 0xFF  # the payload no longer matches its checksum
    path.write_bytes(bytes(data))
    assert kvstarts.load(options) == {} and not path.exists()  # deleted as any damaged file
    files = kvfiles.BlockFolder(tmp_path / "kv", 2**20)
    payload = b'{"file:///x.py": [1, 2], "y": [3, "ab"], "z": [4, "cd", "9:ef"], "w": 5}'
    files.write(kvstarts.NAME, kvstarts.HEADER, payload, 0)
    # The bad entries left out; one without an anchor (as files before them) has none.
    assert kvstarts.load(options) == {"y": (3, "ab", ""), "z": (4, "cd", "9:ef")}
