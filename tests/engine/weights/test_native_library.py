"""The compiled kernel library is code the server runs: it is loaded only from a private folder,
only when it is the user's and writable by no one else, and only after a smoke test in a child
process; one that crashes at load (or is corrupt) is removed and built again, and a failure says
why (`native.failure()`, shown as `kernelsError` in `spec-lsp/status`)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from spec_lsp.engine.weights import native
from spec_lsp.engine.weights.native import library

needs_build = pytest.mark.skipif(not native.available(), reason="native kernels not built here")

# Run in a child with SPEC_LSP_CACHE set: what a server process would see at its first load.
PROBE = (
    "import json; from spec_lsp.engine.weights import native; ok = native.available(); "
    "print(json.dumps([ok, native.failure(), native.library_path().exists()]))"
)


def _copy_build(cache: Path) -> Path:
    """This machine's build (objects, ninja's log, the library) copied into `cache`, with its
    times: a rebuild there only relinks. Returns the copied library."""
    here = native.library_path()
    there = cache / "kernels" / here.parent.name / here.name
    there.parent.parent.mkdir(mode=0o700, parents=True)
    shutil.copytree(here.parent, there.parent, copy_function=shutil.copy2)
    (there.parent / library.STAMP).unlink(missing_ok=True)
    return there


def _probe(cache: Path, **env: str) -> tuple[bool, str | None, bool]:
    run_env = {**os.environ, "SPEC_LSP_CACHE": str(cache), **env}
    run_env.pop("SPEC_LSP_KERNELS", None)  # the build copied is the default path's
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=run_env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    ok, why, exists = json.loads(out.stdout.splitlines()[-1])
    return ok, why, exists


@needs_build
@pytest.mark.skipif(os.environ.get("SPEC_LSP_KERNELS") is not None, reason="the default path")
def test_a_group_writable_library_is_not_loaded_nor_removed(tmp_path: Path) -> None:
    lib = _copy_build(tmp_path)
    lib.chmod(0o775)
    ok, why, exists = _probe(tmp_path, CXX="/bin/false")
    assert not ok and exists
    assert why is not None and "writable by others" in why and "kernels build --force" in why


def test_a_library_or_folder_of_another_owner_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = tmp_path / "build" / "k.so"
    lib.parent.mkdir(mode=0o700)
    lib.write_bytes(b"\x7fELF")
    library.check_owner_and_mode(lib)  # the user's, private: accepted
    monkeypatch.setattr(os, "getuid", lambda: os.stat(lib).st_uid + 1)
    with pytest.raises(library.LibraryError, match="belongs to another user"):
        library.check_owner_and_mode(lib)
    with pytest.raises(library.LibraryError, match="belongs to another user"):
        library.private_dir(lib.parent)


def test_a_link_in_place_of_the_library_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "build" / "real.so"
    real.parent.mkdir(mode=0o700)
    real.write_bytes(b"\x7fELF")
    real.chmod(0o700)
    (tmp_path / "build" / "k.so").symlink_to(real)  # the user's own file, through a link
    with pytest.raises(library.LibraryError, match="is a link"):
        library.check_owner_and_mode(tmp_path / "build" / "k.so")
    seen: list[str] = []
    with pytest.raises(library.LibraryError, match="cannot be opened"):
        library.load_checked(tmp_path / "build" / "k.so", seen.append)
    assert seen == []


def _checked_library(tmp_path: Path, data: bytes) -> Path:
    """A private library file whose sha256 is stamped, as after its smoke test."""
    lib = tmp_path / "build" / "k.so"
    lib.parent.mkdir(mode=0o700, exist_ok=True)
    lib.write_bytes(data)
    lib.chmod(0o700)
    (lib.parent / library.STAMP).write_text(library.sha256(lib) + "\n")
    return lib


def test_a_library_swapped_after_its_check_is_not_what_loads(tmp_path: Path) -> None:
    """The window between the check and the load: the loader is given the file that was opened
    and checked, whatever the name points at by then."""
    lib = _checked_library(tmp_path, b"checked bytes")
    swapped = tmp_path / "build" / "swapped.so"
    swapped.write_bytes(b"other bytes")
    swapped.chmod(0o700)
    loaded: list[bytes] = []

    def load(path: str) -> None:
        os.replace(swapped, lib)  # swapped in under its name between the check and the load
        loaded.append(Path(path).read_bytes())

    library.load_checked(lib, load)
    assert loaded == [b"checked bytes"]


def test_a_library_changed_between_ensure_and_the_load_is_not_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through `native.available`: `ensure` checked and smoke-tested the file, then another was
    put in its place before the load: nothing is loaded, and the failure says why."""
    import torch

    def ensure() -> Path:
        lib = _checked_library(tmp_path, b"smoke-tested bytes")
        lib.write_bytes(b"other bytes")  # after the check
        return lib

    loaded: list[bytes] = []
    monkeypatch.setattr(native, "ensure", ensure)
    monkeypatch.setattr(native, "wanted", lambda: True)
    monkeypatch.setattr(native, "_FAILURE", [])
    monkeypatch.setattr(torch.ops, "load_library", lambda p: loaded.append(Path(p).read_bytes()))
    assert not native.available.__wrapped__()
    assert loaded == [] and "not the one that passed its smoke test" in str(native.failure())


def test_kernel_folders_are_made_private(tmp_path: Path) -> None:
    folder = tmp_path / "kernels"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    library.private_dir(folder)
    library.private_dir(folder / "x86_64-key")
    for path in (folder, folder / "x86_64-key"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700


def _crashing_library(path: Path) -> None:
    """A shared library whose constructor aborts: it crashes whatever process loads it."""
    source = path.with_suffix(".c")
    source.write_text(
        "#include <stdlib.h>\n__attribute__((constructor)) static void f(void) { abort(); }\n"
    )
    subprocess.run(
        [os.environ.get("CC", "cc"), "-shared", "-fPIC", str(source), "-o", str(path)],
        check=True,
        capture_output=True,
    )
    source.unlink()


@needs_build
@pytest.mark.skipif(os.environ.get("SPEC_LSP_KERNELS") is not None, reason="the default path")
@pytest.mark.parametrize("kind", ["crashes at load", "corrupt"])
def test_a_library_that_fails_its_smoke_test_is_removed_and_built_again(
    tmp_path: Path, kind: str
) -> None:
    lib = _copy_build(tmp_path)
    if kind == "corrupt":
        lib.write_bytes(b"\x7fELF" + b"\0" * 64)
    else:
        _crashing_library(lib)
    lib.chmod(0o700)
    bad = library.sha256(lib)
    ok, why, exists = _probe(tmp_path)
    assert ok and why is None and exists  # the server process lived, on a library built again
    assert library.sha256(lib) != bad and library.smoke_tested(lib)


def test_a_failed_smoke_test_removes_the_library_and_says_why(tmp_path: Path) -> None:
    lib = tmp_path / "k.so"
    _crashing_library(lib)
    with pytest.raises(library.LibraryError, match="failed its smoke test .*signal"):
        library.smoke_test(lib)
    assert not lib.exists()


@needs_build
def test_kernels_build_names_the_path_and_library_it_checked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from spec_lsp.cli import main

    assert main(["kernels", "build"]) == 0
    out = capsys.readouterr().out
    assert f"{native.isa()} path" in out and str(native.library_path()) in out


def test_kernels_build_with_the_kernels_off_builds_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from spec_lsp.cli import main

    monkeypatch.setenv("SPEC_LSP_KERNELS", "torch")
    monkeypatch.setenv("SPEC_LSP_CACHE", str(tmp_path))
    assert main(["kernels", "build"]) == 0
    assert "off here" in capsys.readouterr().out and not (tmp_path / "kernels").exists()


@needs_build
def test_the_smoke_test_never_imports_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = _copy_build(tmp_path / "cache")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "torch.py").write_text('raise SystemExit("the workspace torch.py ran")\n')
    monkeypatch.chdir(workspace)
    library.smoke_test(lib)  # raises (and removes the library) if the child imported it
    assert lib.exists() and library.smoke_tested(lib)
