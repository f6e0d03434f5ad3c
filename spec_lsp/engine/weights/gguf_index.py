"""A GGUF file's tensor index: each tensor's type, shape and byte offset, and the metadata a model
is built from; cached as JSON beside the model cache (gguf-py parses the 151,936-token vocabulary
in ~10 s, the cached index reads in ~0.1 s). `FileRows` reads a matrix's rows from the file a slice
at a time. Knows nothing of torch: `gguf_model` builds the modules.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from spec_lsp.engine.sources import ownership

log = logging.getLogger(__name__)

ARCHITECTURES = ("qwen2", "llama")
INDEX_VERSION = 1
META_KEYS = (
    "block_count",
    "context_length",
    "embedding_length",
    "feed_forward_length",
    "attention.head_count",
    "attention.head_count_kv",
    "rope.freq_base",
    "attention.layer_norm_rms_epsilon",
)


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of the file: its GGML type name, shape as rows x columns ([N, K]), bytes."""

    name: str
    kind: str  # GGML type name: "Q4_K", "F32", ...
    shape: list[int]  # [N, K] for a matrix, [K] for a vector
    offset: int  # absolute byte offset in the file
    nbytes: int


@dataclass(frozen=True)
class GGUFIndex:
    arch: str
    meta: dict[str, float]  # the META_KEYS present, as numbers
    tokens: dict[str, int]  # eos/bos/padding token ids the file names
    tensors: dict[str, TensorInfo]

    def matrix(self, path: Path, name: str) -> np.ndarray:
        """A tensor's bytes as rows [N, bytes per row] (a read-only map of the file)."""
        t = self.tensors[name]
        rows = t.shape[0] if len(t.shape) == 2 else 1
        data = np.memmap(path, dtype=np.uint8, mode="r", offset=t.offset, shape=(t.nbytes,))
        return data.reshape(rows, -1)


class FileRows:
    """A matrix's rows of blocks read from the file on demand (`rows[i:j]`, or `rows[indices]`: a
    fresh array of those rows), so that a layer is packed from the file a slice at a time."""

    dtype = np.dtype(np.uint8)

    def __init__(self, path: Path, t: TensorInfo) -> None:
        self.path, self.offset = path, t.offset
        rows = t.shape[0] if len(t.shape) == 2 else 1
        self.shape = (rows, t.nbytes // rows)

    def __getitem__(self, rows: slice | np.ndarray) -> np.ndarray:
        if not isinstance(rows, slice):  # rows by index: the span that holds them, then those
            if len(rows) == 0:
                return np.empty((0, self.shape[1]), dtype=np.uint8)
            low, high = int(rows.min()), int(rows.max()) + 1
            return self[low:high][rows - low]
        start, stop, step = rows.indices(self.shape[0])
        if step != 1:
            raise IndexError("FileRows: contiguous rows only")
        width = self.shape[1]
        out = np.empty((max(0, stop - start), width), dtype=np.uint8)
        with self.path.open("rb", buffering=0) as f:
            f.seek(self.offset + start * width)
            if f.readinto(out.data) != out.nbytes:
                raise OSError(f"{self.path.name}: file shorter than its tensor index says")
        return out


def _stamp(path: Path) -> str:
    st = path.stat()
    return f"{st.st_size}-{st.st_mtime_ns}"


def read_index(path: Path, cache: Path | None = None) -> GGUFIndex:
    """The file's index, from `cache` (a JSON file) when it was written for this very file, in a
    folder of the user's alone (`ownership`: another writer's is refused)."""
    if cache is not None:
        ownership.private_folder(cache.parent)
    if cache is not None and cache.is_file():
        try:
            data = json.loads(ownership.read_text(cache))
            if data.get("version") == INDEX_VERSION and data.get("stamp") == _stamp(path):
                tensors = {k: TensorInfo(**v) for k, v in data["tensors"].items()}
                return GGUFIndex(data["arch"], data["meta"], data["tokens"], tensors)
        except (OSError, ValueError, KeyError, TypeError):
            log.warning("%s: unreadable index cache, reading the file again", cache)
    index = _read_file(path)
    if cache is not None:
        body = {"version": INDEX_VERSION, "stamp": _stamp(path), **asdict(index)}
        ownership.replace_with(cache, json.dumps(body).encode())
    return index


def _read_file(path: Path) -> GGUFIndex:
    from gguf import GGUFReader

    reader = GGUFReader(str(path))

    def field(key: str) -> Any:
        f = reader.fields.get(key)
        if f is None:
            return None
        value = f.parts[-1]
        return bytes(value).decode() if f.types and f.types[0].name == "STRING" else value[0]

    arch = str(field("general.architecture"))
    if arch not in ARCHITECTURES:
        raise ValueError(f"{path.name}: GGUF architecture {arch!r}; readable: {ARCHITECTURES}")
    meta = {k: float(v) for k in META_KEYS if (v := field(f"{arch}.{k}")) is not None}
    tokens = {
        k: int(v)
        for k in ("eos", "bos", "padding")
        if (v := field(f"tokenizer.ggml.{k}_token_id")) is not None
    }
    tensors = {}
    for t in reader.tensors:
        shape = [int(s) for s in reversed(t.shape)]  # gguf-py lists ne0 (the row width) first
        tensors[t.name] = TensorInfo(
            t.name, t.tensor_type.name, shape, int(t.data_offset), int(t.n_bytes)
        )
    return GGUFIndex(arch, meta, tokens, tensors)
