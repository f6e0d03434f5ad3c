"""The engine's own CPU kernels (`q4.cpp`, `kquants.cpp`), compiled once per machine on first use.

- Products over GGUF blocks (Q4_1: 32 weights with an fp16 scale and minimum; Q8_0: an fp16
  scale), the file's bytes interleaved by groups of 8 output rows (`qblocks.pack`), as llama.cpp
  computes them: each row of activations is quantized per block of 32 to int8 (scale max|x| /
  127), a block's dot product is integer multiply-adds, scaled once: `d_w d_x sum(q_w q_x) + m_w
  d_x sum(q_x)`, 8 output rows in the 8 lanes of a vector.
- Products over the GGUF files' K-quants and Q5_0 (`kquants.cpp`, `kblocks`: Q4_K, Q6_K, Q5_0),
  with the same activations and the same 8-row interleave, the file's bytes (Q4_K: +2.8%, its
  6-bit scales as bytes). Where the CPU has VNNI (AVX-VNNI, or AVX512-VNNI with AVX512VL: Intel
  from Sapphire Rapids / Alder Lake, AMD Zen 4) `_mm256_dpbusd_epi32` replaces AVX2's maddubs +
  madd; older CPUs keep AVX2.
- Where the CPU has AVX-512 (F, BW, VL) with VNNI, 512-bit registers: a one-row pass keeps the
  256-bit dot products; passes of 2 rows or more (verification; Q6_K from 3) take the wide tiles,
  two groups (16 output rows) a zmm and one activation row a zmm, the weights of both groups
  unpacked once per block for up to 16 rows, so a row costs its dot products and a few float
  operations; the pair-of-rows path (two k-steps of 8 rows a zmm, up to 32 rows per unpacked
  block) is kept behind `kq_wide_rows` to compare. `SPEC_LSP_KERNELS=avx2+vnni` builds the 256-bit
  VNNI path there instead.
- Where the CPU has AMX (amx_tile, amx_int8) too, passes of 28 rows or more (prefill chunks)
  take the block sums from int8 tiles (TDPBSSD: 16 activation rows x 16 output rows a block of
  32), the weights of 16 output rows unpacked once per pass and used by every tile of rows; the
  float operations stay the 512-bit path's, lane by lane (the same bits). Shorter passes keep the
  512-bit path. `SPEC_LSP_KERNELS=avx512+vnni` builds the 512-bit path without the tiles (to
  compare); the tiles need the kernel's permission (Linux 5.16+), asked once: refused, the 512-bit
  path runs.
- The small operations of a pass, one call each instead of several of torch's ops: RMS norm,
  SiLU(gate) * up, and attention row by row (scores, softmax, values for one query row over
  exactly the keys it sees; float16 or float32 caches).

What each path and each step measured, per CPU, is in docs/benchmarks.md ("Kernels").

Every output depends on its own row alone, computed in the same order whatever the number of rows
and whichever thread runs it (fixed accumulation orders; `-ffp-contract=off` so that the compiler
fuses nothing on its own): a verification pass over k tokens gives bitwise what k one-token passes
give (tests/engine/weights/test_native.py, test_lean.py).

Built by `torch.utils.cpp_extension.load` (ninja; torch's headers, ABI flag and libraries) against
the installed torch, in a child process, into the cache (`cache_root.cache_dir() / "kernels" /
<machine>-<hash of the sources, the flags and torch's version>`), ahead of time: `make setup`,
`spec-lsp models fetch` and `spec-lsp kernels build` (progress shown). Where a model loads and the
library is still missing, the load builds it with a progress report ("compiling the engine's CPU
kernels") rather than silently. `SPEC_LSP_KERNELS=plain` builds them without AVX2, as on a CPU that
lacks it, `SPEC_LSP_KERNELS=avx2` without VNNI, `SPEC_LSP_KERNELS=torch` turns them off (torch's
kernels run the formats, to compare). All paths give bitwise the same numbers (integer dot
products, the same float operations; tests/engine/weights/test_kquants.py).

The library is code this process runs, so before it is loaded: the kernels folder and the build
folder are private (0700, the user's own), the library is the user's and writable by no one else
(else it is not loaded: `spec-lsp kernels build --force` builds a fresh one), and it has passed a
smoke test in a child process (loaded, its two probes called; the passing library's sha256 is
stamped beside it); the file loaded is the one opened and checked (`library.load_checked`). A
library that fails the smoke test (a crash at load, a corrupt file) is removed and built once
again. Any failure leaves the formats on torch's kernels; `failure()` says why, and
`spec-lsp/status` (`kernelsError`) and `spec-lsp doctor` show it.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import platform
import shutil
import sys
from pathlib import Path

import torch

from spec_lsp.engine.sources.cache_root import cache_dir
from spec_lsp.engine.weights.native import library

log = logging.getLogger(__name__)

SOURCES = (Path(__file__).with_name("q4.cpp"), Path(__file__).with_name("kquants.cpp"))
NAME = "spec_lsp_kernels"
AVX512 = {"avx512f", "avx512bw", "avx512vl", "avx512_vnni"}  # the 512-bit path's CPU flags
AMX = {"amx_tile", "amx_int8"}  # and the int8 tiles' (with AVX512: the AMX path)


def _cpu_flags() -> set[str]:
    """The CPU's feature flags (/proc/cpuinfo; empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def tiles_supported() -> bool:
    """Whether Linux supports AMX's tile data for processes (arch_prctl ARCH_GET_XCOMP_SUPP, bit
    18: asks nothing, changes nothing); the kernels still ask for it once before the first tile
    (`kq_isa` says whether it was granted)."""
    import ctypes

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        features = ctypes.c_uint64(0)
        failed = libc.syscall(158, 0x1021, ctypes.byref(features))  # SYS_arch_prctl, x86-64
    except (OSError, AttributeError):
        return False
    return failed == 0 and bool(features.value >> 18 & 1)


def _flags() -> list[str]:
    """The compiler's flags: AVX2 where torch finds it (`SPEC_LSP_KERNELS=plain`: never, the plain
    C++ of a machine without it, to test that path anywhere), and the VNNI dot products where the
    CPU has them (`SPEC_LSP_KERNELS=avx2`: not): in 512-bit registers where it has AVX512 F, BW,
    VL and VNNI (`SPEC_LSP_KERNELS=avx2+vnni`: not), with AMX's int8 tiles where it has them too
    (`SPEC_LSP_KERNELS=avx512+vnni`: not), else AVX-VNNI or AVX512-VNNI with VL."""
    flags = ["-O3", "-std=c++17", "-fopenmp", "-ffp-contract=off"]
    mode = os.environ.get("SPEC_LSP_KERNELS")
    if mode != "plain" and torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512"):
        flags += ["-mavx2", "-mfma", "-mf16c"]
        cpu = _cpu_flags() if mode != "avx2" else set()
        if mode != "avx2+vnni" and cpu >= AVX512:
            flags += ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512vnni"]
            if mode != "avx512+vnni" and cpu >= AMX:
                flags += ["-mamx-tile", "-mamx-int8"]
        elif "avx_vnni" in cpu:
            flags.append("-mavxvnni")
        elif {"avx512_vnni", "avx512vl"} <= cpu:
            flags += ["-mavx512vnni", "-mavx512vl"]
    return flags


def build_dir() -> Path:

    flags = _flags()
    key = hashlib.sha256(
        b"".join(source.read_bytes() for source in SOURCES)
        + " ".join(flags).encode()
        + torch.__version__.encode()
    ).hexdigest()[:16]
    return cache_dir() / "kernels" / f"{platform.machine()}-{key}"


_FAILURE: list[str] = []  # why the last load fell back to torch's kernels (one entry at most)


@functools.cache
def available() -> bool:
    """Whether the native kernels are loaded: the checked library is loaded, built first (with a
    progress report from the caller, `loading.load_engine`) where it is missing. Any failure is
    logged, kept for `failure()`, and leaves torch's kernels in charge."""
    if not wanted():
        return False
    try:
        library.load_checked(ensure(), torch.ops.load_library)  # the very file it checked
    except (OSError, RuntimeError) as exc:  # LibraryError is a RuntimeError
        _FAILURE[:] = [str(exc)]
        log.warning("native kernels unavailable (%s): torch's kernels run instead", exc)
        return False
    return hasattr(torch.ops.spec_lsp, "q4_mm")


def wanted() -> bool:
    """Whether this machine and `SPEC_LSP_KERNELS` call for the native kernels at all."""
    if os.environ.get("SPEC_LSP_KERNELS", "native") == "torch":
        return False
    return platform.machine().lower() in ("x86_64", "amd64")


def failure() -> str | None:
    """Why the native kernels did not load in this process (None: they did, or were not tried)."""
    return _FAILURE[0] if _FAILURE else None


def library_path() -> Path:
    return build_dir() / f"{NAME}.so"


def ensure(progress: library.Progress | None = None, force: bool = False) -> Path:
    """This machine's library, checked (private folders, owner, mode) and smoke-tested in a child
    process; built when missing (or `force`d), rebuilt once when it fails the smoke test."""
    path = library_path()
    library.private_dir(path.parent.parent)
    if force and path.parent.exists():
        shutil.rmtree(path.parent)
    if path.exists():
        library.private_dir(path.parent)
        library.check_owner_and_mode(path)  # refused, never removed: another may own it
        if library.smoke_tested(path):
            return path
        try:
            library.smoke_test(path)
            return path
        except library.LibraryError as exc:
            log.warning("%s; building it again", exc)
    library.build(path, SOURCES, _flags(), progress, verbose=progress is not None)
    return path


def compiled() -> bool:
    """Whether this machine's build of the kernels is in the cache already."""
    return library_path().exists()


def simd() -> bool:
    """Whether the kernels run their AVX2 path (else plain C++)."""
    return available() and bool(torch.ops.spec_lsp.simd())


def isa() -> str:
    """The K-quant kernels' path: "plain", "avx2", "avx2+vnni", "avx512+vnni" (the VNNI dot
    products in 512-bit registers) or "amx+avx512" (int8 tiles for passes of 28 rows or more,
    the 512-bit path for fewer); "" when not available."""
    if not available():
        return ""
    names = ("plain", "avx2", "avx2+vnni", "avx512+vnni", "amx+avx512")
    return names[int(torch.ops.spec_lsp.kq_isa())]


def vector_bits() -> int:
    """The width of the K-quant kernels' dot products: 512, 256, or 0 (plain C++, or none)."""
    if not available():
        return 0
    return (0, 256, 256, 512, 512)[int(torch.ops.spec_lsp.kq_isa())]
