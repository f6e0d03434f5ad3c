"""A process's peak memory, for tests that hold a bound on it under a hostile input."""

from __future__ import annotations

from pathlib import Path

MIB = 1 << 20


def peak_rss(pid: int) -> int:
    """The process's peak resident set since it started (`VmHWM`), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024  # kB
    raise RuntimeError(f"no VmHWM for process {pid}")
