"""The compiled kernel library as a file: built, checked and smoke-tested before any process that
serves models loads it. Knows nothing of what the kernels compute (`native/__init__.py` does).

- Built by `torch.utils.cpp_extension.load` (ninja, torch's headers, ABI flag and libraries) in a
  child process, so a build that crashes, or a library that crashes as it loads, takes down only
  that child. The child loads the library it built and calls its two probes: that is the first
  smoke test.
- Kept in a private folder: the kernels folder and each build folder are 0700 and the user's.
- Loaded only when the library is the user's and writable by no one else (group or world
  writable, or another owner: refused, never removed: it is not ours to remove) and its sha256 is
  the one stamped when it passed a smoke test in a child process; else the smoke test runs again
  first. A library that fails it (a crash at load, a corrupt file) is removed, so it is not kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Sequence
from pathlib import Path

Progress = Callable[[str, float], None]  # (message, fraction done in [0, 1])
STAMP = "smoke-ok"  # the sha256 of the library that passed the smoke test, beside it
SMOKE_TIMEOUT_S = 120
BUILD_TIMEOUT_S = 900

# The probes every build has (q4.cpp, kquants.cpp): a crash or a missing op fails the test.
_SMOKE = (
    "import sys, torch; torch.ops.load_library(sys.argv[1]); "
    "print(int(torch.ops.spec_lsp.simd()), int(torch.ops.spec_lsp.kq_isa()))"
)
_BUILD = """
import json, sys
from torch.utils import cpp_extension
a = json.loads(sys.argv[1])
cpp_extension.load(
    name=a["name"], sources=a["sources"], extra_cflags=a["flags"], extra_ldflags=["-fopenmp"],
    build_directory=a["directory"], is_python_module=False, verbose=a["verbose"],
)
import torch
print("probes", int(torch.ops.spec_lsp.simd()), int(torch.ops.spec_lsp.kq_isa()), flush=True)
"""


class LibraryError(RuntimeError):
    """The library cannot be used; the message says why and what to do, fit for a user."""


def private_dir(path: Path) -> None:
    """Makes `path` (and missing parents) and holds it at 0700; refuses one another user owns."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.stat()
    if info.st_uid != os.getuid():
        raise LibraryError(f"{path} belongs to another user (uid {info.st_uid}): not used")
    if stat.S_IMODE(info.st_mode) != 0o700:
        path.chmod(0o700)


def check_owner_and_mode(library: Path) -> None:
    """Raises unless the library and its folder are the user's and writable by no one else."""
    for path in (library.parent, library):
        info = path.stat()
        if info.st_uid != os.getuid():
            raise LibraryError(
                f"kernel library {path} belongs to another user (uid {info.st_uid}): not loaded"
            )
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise LibraryError(
                f"kernel library {path} is writable by others (mode "
                f"{stat.S_IMODE(info.st_mode):o}): not loaded; `spec-lsp kernels build --force`"
                " builds a fresh one"
            )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def smoke_tested(library: Path) -> bool:
    """Whether this very file passed the smoke test (its stamped sha256 agrees)."""
    stamp = library.with_name(STAMP)
    try:
        return stamp.read_text().strip() == sha256(library)
    except OSError:
        return False


def smoke_test(library: Path) -> None:
    """Loads the library in a child process and calls its probes; a crash, an error or a hang
    removes the library (it is not kept) and raises. A pass is stamped beside it."""
    try:
        # -P: the working directory (a workspace, say) is not put first on the child's path.
        done = subprocess.run(
            [sys.executable, "-P", "-c", _SMOKE, str(library)],
            capture_output=True,
            text=True,
            timeout=SMOKE_TIMEOUT_S,
        )
        ok, why = done.returncode == 0, _exit_reason(done.returncode, done.stderr)
    except subprocess.TimeoutExpired:
        ok, why = False, f"no answer in {SMOKE_TIMEOUT_S} s"
    if not ok:
        library.unlink(missing_ok=True)
        library.with_name(STAMP).unlink(missing_ok=True)
        raise LibraryError(f"kernel library {library} failed its smoke test ({why}): removed")
    _stamp(library)


def build(
    library: Path,
    sources: Sequence[Path],
    flags: Sequence[str],
    progress: Progress | None = None,
    verbose: bool = False,
) -> None:
    """Compiles `sources` into `library` (its folder is the build folder) in a child process,
    which then loads it and calls its probes; stamps it as smoke-tested. Raises LibraryError."""
    private_dir(library.parent.parent)
    private_dir(library.parent)
    args = {
        "name": library.stem,
        "sources": [str(s) for s in sources],
        "flags": list(flags),
        "directory": str(library.parent),
        "verbose": verbose,
    }
    if progress:
        progress(f"compiling the native kernels ({' '.join(flags)}), about a minute", 0.1)
    env = {**os.environ, "PATH": _with_ninja(os.environ.get("PATH", ""))}
    proc = subprocess.Popen(
        [sys.executable, "-P", "-c", _BUILD, json.dumps(args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line.rstrip())
        if progress and line.startswith("["):  # ninja's "[1/3] c++ ..." steps
            progress(line.split(" ", 1)[0] + " " + _step(line), 0.1 + 0.8 * _fraction(line))
    try:
        code = proc.wait(timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    if code != 0 or not library.exists():
        tail = "\n".join(lines[-25:])[-3000:]
        raise LibraryError(
            f"building the native kernels failed ({_exit_reason(code, '')}):\n{tail}"
        )
    library.chmod(0o700)
    _stamp(library)
    if progress:
        progress(f"native kernels built: {library}", 1.0)


def _stamp(library: Path) -> None:
    stamp = library.with_name(STAMP)
    stamp.write_text(sha256(library) + "\n")
    stamp.chmod(0o600)


def _with_ninja(path: str) -> str:
    """PATH with the folders where pip puts `ninja` (the `ninja` wheel's, this environment's
    scripts), which a pipx install does not put on PATH; cpp_extension runs `ninja` by name."""
    extra = [sysconfig.get_path("scripts")]
    try:
        import ninja  # the PyPI wheel, a declared dependency

        extra.insert(0, str(ninja.BIN_DIR))
    except ImportError:
        pass
    return os.pathsep.join([*extra, path]) if path else os.pathsep.join(extra)


def _fraction(line: str) -> float:
    try:
        done, total = line[1 : line.index("]")].split("/")
        return int(done) / max(int(total), 1)
    except ValueError:
        return 0.0


def _step(line: str) -> str:
    """ "compiling q4.cpp" or "linking" for one of ninja's lines (the full command is noise)."""
    words = line.split()
    if "-shared" in words:
        return "linking"
    cpp = next((w for w in words if w.endswith(".cpp")), "")
    return f"compiling {Path(cpp).name}" if cpp else "building"


def _exit_reason(code: int, stderr: str) -> str:
    if code < 0:
        return f"killed by signal {-code}"
    last = stderr.strip().splitlines()[-1:] if stderr else []
    return f"exit {code}" + (f": {last[0][-300:]}" if last else "")
