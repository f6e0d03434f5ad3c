"""The engine's own CPU kernels: products over GGUF Q4_1 / Q8_0 blocks as they are stored.

torch's packed int4 kernel unpacks every code to a float and multiplies in floating point; on a
CPU without AVX-512 that is compute-bound (~4 GB/s of int4 weights read on a machine that copies
at ~28 GB/s). `q4.cpp` does what llama.cpp does: each row of activations is quantized per block of
32 to int8 (scale max|x| / 127), and a block's dot product is one AVX2 integer multiply-add
(`maddubs`) scaled once: `d_w d_x sum(q_w q_x) + m_w d_x sum(q_x)`. The weights stay in the GGUF's
own block layout (20 bytes per 32 weights for Q4_1, 34 for Q8_0), so a bundled model's layers are
its file's bytes.

Every output element depends on one row of activations and one row of weights alone, computed in
the same order whatever the number of rows and whichever thread runs it: a verification pass over
k tokens gives bitwise what k one-token passes give (tests/engine/test_native.py).

The source is compiled once per machine and torch version (about a minute: torch's headers) into
the cache (`sources.cache_dir() / "kernels"`), the first time a model asks for it; `available()`
is False when it cannot be (no C++ compiler, another architecture), and the formats then run on
torch's own kernels. `SPEC_LSP_KERNELS=torch` turns the native kernels off (to compare).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import platform
import subprocess
from pathlib import Path

import torch

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("q4.cpp")
NAME = "spec_lsp_kernels"


def _flags() -> list[str]:
    flags = ["-O3", "-std=c++17", "-fopenmp", "-ffp-contract=off"]
    if torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512"):
        flags += ["-mavx2", "-mfma", "-mf16c"]
    return flags


def build_dir() -> Path:
    from spec_lsp.engine.sources import cache_dir

    flags = _flags()
    key = hashlib.sha256(
        SOURCE.read_bytes() + " ".join(flags).encode() + torch.__version__.encode()
    ).hexdigest()[:16]
    return cache_dir() / "kernels" / f"{platform.machine()}-{key}"


@functools.cache
def available() -> bool:
    """Whether the native kernels are loaded (compiling them the first time)."""
    if os.environ.get("SPEC_LSP_KERNELS", "native") == "torch":
        return False
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        library = build_dir() / f"{NAME}.so"
        if not library.exists():
            compile_to(library)
        torch.ops.load_library(str(library))
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        log.warning("native kernels unavailable (%s): torch's kernels run instead", exc)
        return False
    return hasattr(torch.ops.spec_lsp, "q4_mm")


def compile_to(library: Path) -> None:
    """Compiles `q4.cpp` against this torch into `library` (written whole or not at all)."""
    from torch.utils import cpp_extension

    library.parent.mkdir(parents=True, exist_ok=True)
    tmp = library.with_name(f"{library.stem}.{os.getpid()}.tmp.so")
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    command = [
        os.environ.get("CXX", "c++"),
        *_flags(),
        "-shared",
        "-fPIC",
        f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
        *(f"-I{path}" for path in cpp_extension.include_paths()),
        str(SOURCE),
        "-o",
        str(tmp),
        *(f"-L{path}" for path in cpp_extension.library_paths()),
        "-lc10",
        "-ltorch_cpu",
    ]
    log.info("compiling the native kernels once (under a minute) into %s", library.parent)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"{command[0]} failed: {done.stderr.strip()[-2000:]}")
        os.replace(tmp, library)  # atomic: another process never loads half a library
    finally:
        tmp.unlink(missing_ok=True)


def simd() -> bool:
    """Whether the kernels run their AVX2 path (else plain C++)."""
    return available() and bool(torch.ops.spec_lsp.simd())
