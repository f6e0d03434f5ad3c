"""The compiled kernel library as a file: built, checked and smoke-tested before any process that
serves models loads it. Knows nothing of what the kernels compute (`native/__init__.py` does).

- Built by `torch.utils.cpp_extension.load` (ninja, torch's headers, ABI flag and libraries) in a
  child process, so a build that crashes, or a library that crashes as it loads, takes down only
  that child. The child loads the library it built and calls its two probes: that is the first
  smoke test.
- Kept in a private folder: the kernels folder and each build folder are 0700 and the user's.
- Loaded only when the library is the user's and writable by no one else (group or world
  writable, another owner, or a link: refused, never removed: it is not ours to remove) and its
  sha256 is the one stamped when it passed a smoke test in a child process; else the smoke test
  runs again first. A library that fails it (a crash at load, a corrupt file) is removed, so it
  is not kept.
- Loaded by what was checked (`load_checked`): the file is opened without following a link, its
  owner and mode checked on the descriptor, its bytes hashed from it, and that very file loaded
  through `/proc/self/fd/N`, whatever its name points at by then.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sysconfig
from collections.abc import Callable, Sequence
from pathlib import Path

from spec_lsp.engine.sources import ownership
from spec_lsp.interpreter import child_command, child_env

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
    """Makes `path` (and missing parents) and holds it at 0700; refuses one another user owns, a
    link, or one below a cache folder that another user owns or can write (`ownership`)."""
    try:
        ownership.private_folder(path.parent)
    except ownership.UntrustedCache as exc:
        raise LibraryError(str(exc)) from exc
    path.mkdir(mode=0o700, exist_ok=True)
    info = os.lstat(path)
    if info.st_uid != ownership.uid() or not stat.S_ISDIR(info.st_mode):
        raise LibraryError(
            f"{path} belongs to another user (uid {info.st_uid}) or is not a folder: not used;"
            " remove it (`spec-lsp kernels build` makes it again)"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        path.chmod(0o700)


def check_owner_and_mode(library: Path) -> None:
    """Raises unless the library and its folder are the user's and writable by no one else."""
    for path in (library.parent, library):
        _check(path, os.lstat(path))


def _check(path: Path, info: os.stat_result) -> None:
    """`check_owner_and_mode` of one path, on its `lstat` or the `fstat` of an open file."""
    if stat.S_ISLNK(info.st_mode):
        raise LibraryError(
            f"kernel library {path} is a link: not loaded; remove it (`spec-lsp kernels build"
            " --force` builds a fresh one)"
        )
    if info.st_uid != ownership.uid():
        raise LibraryError(
            f"kernel library {path} belongs to another user (uid {info.st_uid}): not loaded;"
            " remove it (or ask its owner to), or set SPEC_LSP_CACHE to a folder of your own"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise LibraryError(
            f"kernel library {path} is writable by others (mode "
            f"{stat.S_IMODE(info.st_mode):o}): not loaded; `spec-lsp kernels build --force`"
            " builds a fresh one"
        )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_checked(library: Path, load: Callable[[str], object]) -> None:
    """`load(path)` of the very file that was checked: opened without following a link, owner
    and mode checked on its descriptor, its bytes hashed from it and compared with the smoke
    test's stamp, then loaded through `/proc/self/fd/N` (a file swapped in under its name after
    the check is not the one loaded). Raises LibraryError."""
    try:
        fd = os.open(library, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise LibraryError(
            f"kernel library {library} cannot be opened ({exc}): not loaded"
        ) from exc
    try:
        _check(library, os.fstat(fd))
        try:
            stamped = library.with_name(STAMP).read_text().strip()
        except OSError:
            stamped = ""
        if stamped != _sha256_fd(fd):
            raise LibraryError(
                f"kernel library {library} is not the one that passed its smoke test: not loaded;"
                " `spec-lsp kernels build --force` builds a fresh one"
            )
        by_fd = f"/proc/self/fd/{fd}"
        load(by_fd if os.path.exists(by_fd) else str(library))
    finally:
        os.close(fd)


def _sha256_fd(fd: int) -> str:
    digest, offset = hashlib.sha256(), 0
    while block := os.pread(fd, 1 << 20, offset):
        digest.update(block)
        offset += len(block)
    return digest.hexdigest()


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
        # The working directory (a workspace, say) is not on the child's path.
        done = subprocess.run(
            child_command("-c", _SMOKE, str(library)),
            capture_output=True,
            env=child_env(),
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
    env = {**child_env(), "PATH": _with_ninja(os.environ.get("PATH", ""))}
    proc = subprocess.Popen(
        child_command("-c", _BUILD, json.dumps(args)),
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
    ownership.replace_with(library.with_name(STAMP), (sha256(library) + "\n").encode())


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
