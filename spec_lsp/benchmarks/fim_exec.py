"""Judges a filled hole: runs the document against a HumanEval problem's tests (pass or fail,
never a hang) and scores it as a row of `bench fim`.

The program is the filled document (`prompt + completion + suffix` as the editor left it), then
the problem's `test` and `check(entry_point)`; it is model output, so it runs in a child process,
fenced like this:

- `python -I` (isolated: no PYTHON* variables, no user site, no script directory on the path),
  with a minimal environment and a fresh temporary directory as its working directory;
- resource limits set by a prelude that runs before the program's first line, soft = hard so the
  program cannot raise them: address space (`MEMORY_BYTES`), CPU seconds (the timeout plus one),
  file size, open files. Not in `preexec_fn`: the bench process runs an inference thread and
  torch's threads, and Python's documentation warns that `preexec_fn` can deadlock the child
  of a threaded process before its exec;
- a new session, so a timeout kills the child's whole process group (wall-clock timeout, then
  SIGKILL);
- no network, twice: the prelude replaces `socket.socket` (and the C module's `_socket.socket`)
  with one that raises, and where `unshare -rn` works on this machine (probed once: an
  unprivileged user namespace with an empty network namespace, where even 127.0.0.1 is down) the
  child runs inside it (it does in the Linux container this was written in). Without
  `unshare` the guard alone holds; a program that makes a socket by other means (ctypes) would
  get past it there.

It knows nothing about models, prompts, editors or the completion service.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass

MEMORY_BYTES = 2 << 30
OPEN_FILES = 256
FILE_BYTES = 64 << 20

# Prepended to every program: its limits, and a socket refused, before the program's code runs.
PRELUDE = """\
import resource as _r
for _k, _v in {limits!r}:
    _k = getattr(_r, _k)
    _h = _r.getrlimit(_k)[1]
    _v = _v if _h == _r.RLIM_INFINITY else min(_v, _h)
    _r.setrlimit(_k, (_v, _v))
import _socket, socket as _s


class _NoNetwork(_socket.socket):
    def __init__(self, *args, **kwargs):
        raise OSError("network access is disabled in the FIM bench")


_s.socket = _socket.socket = _NoNetwork
del _r, _k, _h, _v, _s, _NoNetwork
"""


def prelude(timeout_s: float) -> str:
    cpu = int(timeout_s) + 1
    limits = [
        ("RLIMIT_CPU", cpu),
        ("RLIMIT_AS", MEMORY_BYTES),
        ("RLIMIT_FSIZE", FILE_BYTES),
        ("RLIMIT_NOFILE", OPEN_FILES),
    ]
    return PRELUDE.format(limits=limits)


@dataclass(frozen=True)
class Outcome:
    passed: bool
    reason: str  # "passed", "failed", "timeout"
    detail: str = ""  # the last lines of stderr when it failed


def program(document: str, test: str, entry_point: str) -> str:
    """The checked program: the filled document, the problem's tests and the call that runs them."""
    return f"{document}\n\n{test}\n\ncheck({entry_point})\n"


@functools.cache
def unshare_prefix() -> tuple[str, ...]:
    """`("unshare", "-rn")` when it runs a command here (a user and a network namespace), else
    ()."""
    path = shutil.which("unshare")
    if path is None:
        return ()
    try:
        probe = subprocess.run([path, "-rn", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ()
    return (path, "-rn") if probe.returncode == 0 else ()


def run_program(source: str, timeout_s: float = 10.0) -> Outcome:
    """Runs `source` (after the prelude) in a fenced child; passed when it exits 0 within
    `timeout_s` seconds of wall time."""
    with tempfile.TemporaryDirectory(prefix="spec-lsp-fim-") as cwd:
        path = os.path.join(cwd, "candidate.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(prelude(timeout_s) + source)
        cmd = [*unshare_prefix(), sys.executable, "-I", path]
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": cwd, "TMPDIR": cwd}
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            _, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return Outcome(False, "timeout", f"no exit within {timeout_s:g} s")
    if proc.returncode == 0:
        return Outcome(True, "passed")
    tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
    return Outcome(False, "failed", "\n".join(tail))


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def check(problem: dict[str, str], document: str, timeout_s: float = 10.0) -> Outcome:
    """Whether `document` (the problem's prompt and suffix with its hole filled) passes the
    problem's tests."""
    return run_program(program(document, problem["test"], problem["entry_point"]), timeout_s)


@dataclass
class Row:
    task_id: str
    passed: bool
    outcome: str  # passed, failed, timeout
    exact_first_line: bool
    tokens: int
    latency_ms: float
    multi_line: bool  # the suggestion spans lines
    hole_multi_line: bool  # the canonical solution spans lines
    completion: str  # the text inserted
    detail: str = ""  # the end of stderr for a failure


def first_line(text: str) -> str:
    return text.split("\n", 1)[0].strip()


def spans_lines(text: str) -> bool:
    """True when `text` has a line break before its final one."""
    return "\n" in text.rstrip("\n")


def score(
    problem: dict[str, str], document: str, inserted: str, tokens: int, ms: float, timeout_s: float
) -> Row:
    """The problem's row for `document`, its text with `inserted` applied at the hole: the
    problem's tests run on it."""
    outcome = check(problem, document, timeout_s)
    canonical = problem["canonical_solution"]
    return Row(
        task_id=problem["task_id"],
        passed=outcome.passed,
        outcome=outcome.reason,
        exact_first_line=first_line(inserted) == first_line(canonical),
        tokens=tokens,
        latency_ms=round(ms, 1),
        multi_line=spans_lines(inserted),
        hole_multi_line=spans_lines(canonical),
        completion=inserted,
        detail=outcome.detail,
    )
