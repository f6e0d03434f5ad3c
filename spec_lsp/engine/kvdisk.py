"""KV prefixes on disk: a prompt window's KV kept across closing a file and restarting the server,
so that a reopened file's first request does not wait for its whole window's prefill.

What is stored: the lean forward's cache (`LeanCache`) in blocks of `BLOCK` tokens, one file per
block (`kvfiles`: a verified header, then the block's keys and values for every layer as raw
bytes). Block n's file is named by a chain hash, as vLLM's prefix caching names its blocks: the
sha256 of block n - 1's name and block n's token ids, block 0's chained from the identity. The
identity (`model_identity`) names what the numbers depend on: the model (name, config, a
fingerprint of its weights), the forward and its code, the kernels, the KV's dtype and shape. The
positions past a state's last whole block (its tail: the end of a prompt, its suffix, what was
generated) are kept too, in one file per chain position (`tail_name`), the latest state's: a file
reopened as it was closed, the cursor where it was, restores its whole prompt but a token. A
window whose start matches a stored one and whose end differs gets the longest stored prefix;
nothing is ever restored for other tokens or another model, so no answer can be stale, and the
lean forward's passes being row-invariant, a restored prefix gives bitwise the logits of a cold
prefill (tests/engine/test_kvdisk.py).

Files are written on a thread of their own, from snapshots the caller's thread takes (a document
being dropped or saved stays usable meanwhile). A chain's earlier blocks are always marked as more
recently used than its later ones, so the budget's eviction never strands a block behind a
missing one. Nothing here raises into its caller: a failure is logged and the KV is simply not
kept (or not restored).

Knows nothing of documents' text, requests or LSP; `DocDisk` is `cache.DocumentStates`' tier.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import threading
import time
from array import array
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from spec_lsp.engine.cache import DocState, ModelState, common_prefix_len
from spec_lsp.engine.kvfiles import BlockFolder, folder
from spec_lsp.engine.lean import LeanCache, LeanDecoder
from spec_lsp.engine.weights import native

log = logging.getLogger(__name__)

BLOCK = 256  # tokens per file: two of the engine's prefill chunks, so restored KV ends on one
COLD_PREFILL = 2 * BLOCK  # an idle request that prefilled this many tokens saves its window
MIN_TAIL = 16  # tokens: a shorter tail is not kept, and a lookup for fewer than this not made
MAX_PENDING = 256 * 2**20  # bytes of snapshots waiting for the writer; past this none are taken
EXIT_WAIT_S = 10.0  # how long the interpreter's exit waits for pending writes
_CODE = ("lean.py", "fusion.py", "compact.py", "qblocks.py", "kblocks.py", "quant.py")


def chain(identity: str, tokens: list[int], block: int = BLOCK) -> list[str]:
    """The names of the whole blocks of `tokens`: block n's covers the identity and every token
    up to its end."""
    key = _seed(identity)
    names = []
    for start in range(0, len(tokens) - block + 1, block):
        ids = array("q", tokens[start : start + block])  # int64, this machine's byte order
        key = hashlib.sha256(key + ids.tobytes()).digest()
        names.append(key.hex())
    return names


def tail_name(identity: str, names: list[str]) -> str:
    """The name of the tail file after the whole blocks `names` (a `chain`'s first n, n >= 0)."""
    key = bytes.fromhex(names[-1]) if names else _seed(identity)
    return hashlib.sha256(key + b"tail").hexdigest()


def _seed(identity: str) -> bytes:
    return hashlib.sha256(b"spec-lsp kv\0" + identity.encode()).digest()


def _fingerprint(model: torch.nn.Module) -> str:
    """sha256 over every parameter's and buffer's name, dtype and shape, small ones' bytes and 16
    evenly spaced 4 KiB windows of large ones (~20 ms for a 1.5B model)."""
    digest = hashlib.sha256()
    tensors: dict[str, torch.Tensor] = dict(model.named_parameters())
    tensors.update(model.named_buffers())
    window = 4096
    for name, tensor in tensors.items():
        digest.update(f"{name} {tensor.dtype} {tuple(tensor.shape)}".encode())
        flat = tensor.detach().contiguous().reshape(-1).view(torch.uint8)
        size = flat.numel()
        if size <= 16 * window:
            digest.update(flat.numpy().tobytes())
            continue
        for start in range(0, size - window + 1, (size - window) // 15):
            digest.update(flat[start : start + window].numpy().tobytes())
    return digest.hexdigest()


def model_identity(name: str, model: Any, forward: LeanDecoder, kernels: str) -> str:
    """What a model's cached KV depends on, as one string (the caller's model, its forward)."""
    here = Path(__file__).parent
    code = hashlib.sha256(b"".join((here / f).read_bytes() for f in _CODE if (here / f).exists()))
    config = getattr(model, "config", None)
    parts = {
        "model": name,
        "config": hashlib.sha256(config.to_json_string().encode()).hexdigest() if config else "",
        "weights": _fingerprint(model),
        "forward": f"{forward.name} {code.hexdigest()[:16]} torch {torch.__version__}",
        "kernels": f"{kernels} {native.build_dir().name if forward.native else 'torch'}",
        "kv": f"{forward.kv_dtype} {len(forward.layers)}x{forward.kv_heads}x{forward.head_dim}",
    }
    return json.dumps(parts, sort_keys=True)


def _snapshot(cache: LeanCache, start: int, n: int) -> torch.Tensor:
    """[bytes] uint8: positions start .. start + n - 1 of every layer, keys ([kv_heads, head_dim,
    n]) then values ([kv_heads, n, head_dim]), layer by layer (one copy, no temporaries)."""
    _, kv_heads, head_dim = cache.shape
    size = kv_heads * head_dim * n  # elements of one layer's keys, and of its values
    out = torch.empty(2 * len(cache.keys) * size, dtype=cache.dtype)
    for i, (keys, values) in enumerate(zip(cache.keys, cache.values, strict=True)):
        out[2 * i * size : (2 * i + 1) * size].view(kv_heads, head_dim, n).copy_(
            keys[:, :, start : start + n]
        )
        out[(2 * i + 1) * size : (2 * i + 2) * size].view(kv_heads, n, head_dim).copy_(
            values[:, start : start + n]
        )
    return out.view(torch.uint8)


def _fill(cache: LeanCache, payload: torch.Tensor, start: int, n: int) -> None:
    """Writes a `_snapshot` of positions start .. start + n - 1 back into `cache`."""
    _, kv_heads, head_dim = cache.shape
    size = kv_heads * head_dim * n * cache.dtype.itemsize
    for i, (keys, values) in enumerate(zip(cache.keys, cache.values, strict=True)):
        k = payload[2 * i * size : (2 * i + 1) * size].view(cache.dtype)
        v = payload[(2 * i + 1) * size : (2 * i + 2) * size].view(cache.dtype)
        keys[:, :, start : start + n].copy_(k.view(kv_heads, head_dim, n))
        values[:, start : start + n].copy_(v.view(kv_heads, n, head_dim))


def _block_bytes(forward: LeanDecoder, n: int) -> int:
    """Bytes of `n` positions' keys and values, every layer."""
    per_layer = 2 * forward.kv_heads * forward.head_dim * n * forward.kv_dtype.itemsize
    return per_layer * len(forward.layers)


def _tail_match(header: dict[str, Any] | None, identity: str, start: int, tokens: list[int]) -> int:
    """How many of `tokens` past `start` a tail file's header says it holds (0: none, another
    identity or position)."""
    if header is None or header.get("identity") != identity or header.get("start") != start:
        return 0
    tail = header.get("tokens")
    if not header.get("tail") or not isinstance(tail, list):
        return 0
    return common_prefix_len(tail, tokens[start:])


@dataclass
class _Job:
    name: str
    header: dict[str, Any]
    payload: torch.Tensor  # [bytes] uint8, a snapshot of one block
    mtime_ns: int


class KVDisk:
    """A folder of KV blocks within `budget_bytes`: `save` and `restore` one model's
    `ModelState` under an identity."""

    def __init__(self, path: Path, budget_bytes: int, block: int = BLOCK) -> None:
        self.files = BlockFolder(path, budget_bytes)
        self.block = block
        self._jobs: deque[_Job] = deque()
        self._pending = 0  # bytes queued and not yet written
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def save(self, identity: str, state: ModelState) -> int:
        """Queues the whole blocks of `state`'s KV that are not on disk yet (the ones that are
        count as used now), and its tail (`MIN_TAIL` tokens or more) where the one stored after
        them holds other tokens: the number of files queued. Never raises."""
        try:
            return self._save(identity, state)
        except Exception as exc:  # the KV is just not kept
            log.warning("KV not saved to %s: %s", self.files.path, exc)
            return 0

    def _save(self, identity: str, state: ModelState) -> int:
        cache = state.cache
        if not isinstance(cache, LeanCache) or not self.files.usable:
            return 0
        names = chain(identity, state.tokens[: cache.length], self.block)
        now, queued = time.time_ns(), 0
        for i, name in enumerate(names):
            used = now + (len(names) - i) * 1000  # a chain's earlier blocks: more recently used
            if self.files.touch(name, used):
                continue
            start = i * self.block
            header = {
                "identity": identity,
                "start": start,
                "tokens": state.tokens[start : start + self.block],
                "dtype": str(cache.dtype).removeprefix("torch."),
                "shape": list(cache.shape),
            }
            if not self._submit(_Job(name, header, _snapshot(cache, start, self.block), used)):
                return queued
            queued += 1
        return queued + self._save_tail(identity, state, names, now)

    def _save_tail(self, identity: str, state: ModelState, names: list[str], now: int) -> int:
        """Queues `state`'s tail past its whole blocks `names` (1 when queued)."""
        cache = state.cache
        start = len(names) * self.block
        tail = state.tokens[start : cache.length]
        if len(tail) < MIN_TAIL:
            return 0
        name = tail_name(identity, names)
        kept = self.files.header(name)
        if kept is not None and kept.get("tokens") == tail and self.files.touch(name, now):
            return 0
        header = {
            "identity": identity,
            "start": start,
            "tail": True,
            "tokens": tail,
            "dtype": str(cache.dtype).removeprefix("torch."),
            "shape": list(cache.shape),
        }
        return int(self._submit(_Job(name, header, _snapshot(cache, start, len(tail)), now)))

    def restore(self, identity: str, state: ModelState, tokens: list[int]) -> int:
        """Fills an empty `state` of the lean forward with the longest stored prefix of `tokens`:
        the number of tokens restored (0: none; the state stays empty). Never raises."""
        try:
            return self._restore(identity, state, tokens)
        except Exception as exc:
            log.warning("KV not restored from %s: %s", self.files.path, exc)
            state.reset()
            return 0

    def stored(self, identity: str, tokens: list[int]) -> int:
        """How many of `tokens` the files there would restore at most (their chain's blocks
        that are on disk, from the first, and what the tail after them shares with `tokens`;
        only the tail's header is read). Never raises."""
        try:
            if not self.files.usable:
                return 0
            names = chain(identity, tokens, self.block)
            found = next((i for i, n in enumerate(names) if not self.files.has(n)), len(names))
            start = found * self.block
            header = self.files.header(tail_name(identity, names[:found]))
            return start + _tail_match(header, identity, start, tokens)
        except Exception as exc:
            log.warning("KV not looked up in %s: %s", self.files.path, exc)
            return 0

    def _restore(self, identity: str, state: ModelState, tokens: list[int]) -> int:
        forward = state.forward
        if len(state) or state.tracks_features or not isinstance(forward, LeanDecoder):
            return 0
        if not self.files.usable:
            return 0
        names = chain(identity, tokens, self.block)
        cache: LeanCache | None = None
        now, done = time.time_ns(), 0
        for i, name in enumerate(names):
            start = i * self.block
            expect = {
                "identity": identity,
                "start": start,
                "tokens": tokens[start : start + self.block],
                "bytes": _block_bytes(forward, self.block),
            }
            payload = self.files.read(name, expect)
            if payload is None:
                break
            if cache is None:
                cache = forward.new_cache()
                cache.reserve(len(names) * self.block)
            _fill(cache, torch.frombuffer(payload, dtype=torch.uint8), start, self.block)
            self.files.touch(name, now + (len(names) - i) * 1000)
            done = start + self.block
        cache, done = self._restore_tail(
            identity, forward, cache, names[: done // self.block], tokens, now
        )
        if cache is None:
            return 0
        cache.length = done
        state.cache, state.tokens = cache, list(tokens[:done])
        return done

    def _restore_tail(
        self,
        identity: str,
        forward: LeanDecoder,
        cache: LeanCache | None,
        names: list[str],
        tokens: list[int],
        now: int,
    ) -> tuple[LeanCache | None, int]:
        """The whole blocks `names` restored into `cache` (None: none), and the stored tail
        after them where it shares `MIN_TAIL` tokens or more with `tokens`: the cache and the
        tokens it covers."""
        start = len(names) * self.block
        name = tail_name(identity, names)
        header = self.files.header(name)
        shared = _tail_match(header, identity, start, tokens)
        if shared < MIN_TAIL or header is None:
            return cache, start
        tail = header["tokens"]
        if len(tail) >= self.block:  # never written so: not ours to size a cache by
            return cache, start
        expect = {
            "identity": identity,
            "start": start,
            "tail": True,
            "tokens": tail,
            "bytes": _block_bytes(forward, len(tail)),
        }
        payload = self.files.read(name, expect)
        if payload is None:
            return cache, start
        if cache is None:
            cache = forward.new_cache()
        cache.length = start  # the blocks filled: kept if the room grows
        cache.reserve(start + len(tail))
        _fill(cache, torch.frombuffer(payload, dtype=torch.uint8), start, len(tail))
        self.files.touch(name, now)  # older than its blocks: evicted before them
        return cache, start + shared

    def _submit(self, job: _Job) -> bool:
        size = job.payload.numel()
        with self._cond:
            if self._pending + size > MAX_PENDING or size > self.files.budget:
                log.info("a KV block is not kept: %d bytes wait to be written", self._pending)
                return False
            self._pending += size
            self._jobs.append(job)
            self._cond.notify_all()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kv-disk", daemon=True)
                self._thread.start()
                atexit.register(self.flush, EXIT_WAIT_S)
        return True

    def flush(self, timeout: float | None = None) -> bool:
        """Waits until every queued block is written (or `timeout` s): whether they all are."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._jobs))
                job = self._jobs.popleft()
            try:
                if self.files.usable:
                    self.files.write(job.name, job.header, job.payload.numpy(), job.mtime_ns)
                    self.files.bound()
            except Exception as exc:
                log.warning("KV not saved to %s: %s", self.files.path, exc)
            finally:
                with self._cond:
                    self._pending -= job.payload.numel()
                    self._cond.notify_all()


class DocDisk:
    """An engine's documents' KV on disk (the `cache.Tier` of its `DocumentStates`): the target's
    and a draft model's states, each under its model's identity."""

    def __init__(self, disk: KVDisk, target: LeanDecoder, draft: LeanDecoder | None) -> None:
        self.disk, self.target, self.draft = disk, target, draft
        self.identities: dict[LeanDecoder, str] = {}  # filled by `for_engine`

    def save(self, state: DocState) -> None:
        for model in (state.target, state.draft):
            if isinstance(model, ModelState) and model.forward in self.identities:
                self.disk.save(self.identities[model.forward], model)

    def load(self, tokens: list[int], held: int = 0) -> DocState | None:
        """A new document state holding the longest stored prefix of `tokens` (the target's;
        the draft model's where stored too), or None when none longer than `held` tokens (what
        the document's own KV shares with `tokens`) is stored."""
        identity = self.identities[self.target]
        if len(tokens) - held < MIN_TAIL:
            return None  # less to gain than a lookup is worth: the typing's usual case
        if held and self.disk.stored(identity, tokens) <= held:
            return None
        target = ModelState(self.target)
        restored = self.disk.restore(identity, target, tokens)
        log.debug("KV on disk: %d of a prompt's %d tokens (%d held)", restored, len(tokens), held)
        if restored <= held:
            return None
        draft = None
        if self.draft is not None:
            draft = ModelState(self.draft)
            self.disk.restore(self.identities[self.draft], draft, tokens)
        return DocState(target, draft)

    def flush(self, timeout: float | None = None) -> bool:
        return self.disk.flush(timeout)


def for_engine(engine: Any) -> DocDisk | None:
    """A `SpecEngine`'s documents' disk tier, as its options say; None when off, or when its
    target does not run the lean forward or a feature head reads the target's features (which
    are not stored). Never raises: a folder it may not use is logged and leaves it off."""
    path = folder(engine.options)
    target, draft = engine.forwards.target, engine.forwards.draft
    if path is None or engine.head is not None or not isinstance(target, LeanDecoder):
        return None
    try:
        disk = KVDisk(path, int(engine.options.kv_disk_mb * 2**20))
        if not disk.files.usable:
            return None
        tier = DocDisk(disk, target, draft if isinstance(draft, LeanDecoder) else None)
        kernels = engine.kernels
        tier.identities[target] = model_identity(engine.name, engine.target, target, kernels)
        if tier.draft is not None:
            name, model = f"{engine.name} draft", engine.draft_model
            tier.identities[tier.draft] = model_identity(name, model, tier.draft, kernels)
    except Exception as exc:
        log.warning("KV is not kept on disk: %s", exc)
        return None
    return tier
