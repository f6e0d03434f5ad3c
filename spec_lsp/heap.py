"""Handing the C heaps' free memory back to the OS.

A prefill of a whole document allocates activations far larger than the KV it keeps (attention
scores alone are heads x tokens^2 floats per layer), and a dropped document frees its KV. glibc
keeps such freed memory in its heaps, so the process grows by about 100 MB over a few opened
documents and never shrinks. `release_free_memory` (`malloc_trim`, a few ms) gives it back; the
inference worker calls it when it goes idle after such work.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn: Callable[[int], int] = libc.malloc_trim  # glibc only (musl has none)
    except (OSError, AttributeError):
        return None
    return fn


def release_free_memory() -> bool:
    """Returns the C heaps' free memory to the OS; False where the C library cannot."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
