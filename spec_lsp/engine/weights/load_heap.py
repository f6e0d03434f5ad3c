"""glibc's heap while a model loads: each large temporary given back to the OS when it is freed.

Loading packs, permutes and fuses every layer through temporaries of 1-200 MB. glibc serves the
first from mmap, but each such free raises its mmap threshold (up to 32 MiB), so the later ones
come from the heap, whose freed holes stay resident until `malloc_trim`: the coder pair's loading
peaked ~500 MB above its loaded memory while `lean` fused its layers (2.27 GB for 1.76 GB). Inside
`mmapped_temporaries` every allocation of 4 MiB or more is a map of its own, returned on free:
the peak 1.96 GB, the fusion as fast as without (47 s against 44 s, run side by side; from 1 MiB,
its many small maps and their page faults made it several times slower). After it, the thresholds
are those glibc's own adjustment reaches (32 MiB, trim at 64 MiB), so the running engine allocates
as it did. A no-op where the C library has no `mallopt` (not glibc).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import sys
from collections.abc import Callable, Iterator

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
WHILE_LOADING = (4 << 20, 4 << 20)  # mmap from 4 MiB, trim the heap's top past 4 MiB
AFTER = (32 << 20, 64 << 20)  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64 bits, twice it


@functools.cache
def _mallopt() -> Callable[[int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn: Callable[[int, int], int] = libc.mallopt
    except (OSError, AttributeError):
        return None
    return fn


def _set(mmap: int, trim: int) -> None:
    mallopt = _mallopt()
    if mallopt is not None:
        mallopt(M_MMAP_THRESHOLD, mmap)
        mallopt(M_TRIM_THRESHOLD, trim)


@contextlib.contextmanager
def mmapped_temporaries() -> Iterator[None]:
    """Large allocations mapped on their own while the block runs (see the module's docstring)."""
    _set(*WHILE_LOADING)
    try:
        yield
    finally:
        _set(*AFTER)
