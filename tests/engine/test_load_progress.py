"""A model load says where it stands: fractions that never go back, sub-steps inside the reading of
a GGUF file's layers; and the layers are packed from the file a slice of rows at a time, with no
whole copy of a matrix beside the one being built (what kept the coder pair's loading peak ~30%
above its loaded memory)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from spec_lsp.commands.complete import LoadPrinter
from spec_lsp.engine import progress
from spec_lsp.engine.loading import LoadSpec, load_engine
from spec_lsp.engine.weights import gguf_model, native, qblocks
from spec_lsp.engine.weights.gguf_index import FileRows, read_index
from tests.engine.gguf_files import write_tiny

Reports = list[tuple[str, float]]


def _recorder() -> tuple[Reports, progress.Progress]:
    seen: Reports = []
    return seen, lambda message, fraction: seen.append((message, fraction))


def test_steps_never_go_back_and_map_a_steps_own_fractions_into_its_share() -> None:
    seen, record = _recorder()
    steps = progress.Steps(record)
    steps("a", 0.2)
    inner = steps.within(0.4, 0.6)
    inner("download", 0.5)
    inner("download again from 0", 0.0)  # a source's own reporter restarting
    inner("past the end", 3.0)
    steps("last", 1.0)
    assert [f for _, f in seen] == pytest.approx([0.2, 0.5, 0.5, 0.6, 1.0])


def test_the_engine_load_reports_from_0_to_ready_never_going_back() -> None:
    seen, record = _recorder()
    spec = LoadSpec(name="tiny", target="builtin:tiny-target", draft="builtin:tiny-draft")
    load_engine(spec, device="cpu", progress=record, random_weights=True)
    fractions = [f for _, f in seen]
    assert fractions[0] == 0.0 and seen[-1] == ("ready", 1.0)
    assert fractions == sorted(fractions)
    assert any(m.startswith("loading draft") for m, _ in seen)


def test_reading_a_gguf_reports_its_tensors_as_sub_steps(tmp_path: Path) -> None:
    path = write_tiny(tmp_path / "qwen2.gguf", "qwen2")
    seen, record = _recorder()
    with progress.scope(record):
        gguf_model.load_model(path, index_cache=tmp_path / "index.json")
    fractions = [f for _, f in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert len(seen) > 5, "more than a start and an end"
    total = len(read_index(path).tensors)
    assert seen[-1][0].endswith(f"{total}/{total} tensors")


class CountingRows:
    """A file's rows that remember the largest slice read."""

    def __init__(self, rows: FileRows) -> None:
        self.rows, self.shape, self.dtype, self.largest = rows, rows.shape, rows.dtype, 0

    def __getitem__(self, index: Any) -> np.ndarray:
        out = self.rows[index]
        self.largest = max(self.largest, out.shape[0])
        return out


@pytest.mark.parametrize("ordered", [False, True])
def test_a_layer_is_packed_from_the_file_a_slice_at_a_time_bitwise_as_from_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ordered: bool
) -> None:
    path = write_tiny(tmp_path / "qwen2.gguf", "qwen2")
    index = read_index(path)
    monkeypatch.setattr(qblocks, "PACK_ROWS", 64)  # several slices of the tiny model's rows
    for name in ("token_embd.weight", "blk.0.ffn_down.weight", "blk.0.attn_q.weight"):
        t = index.tensors[name]
        kind = qblocks.KIND_OF_GGML[t.kind]
        whole = torch.from_numpy(np.array(index.matrix(path, name)))
        order = torch.randperm(whole.shape[0]) if ordered else None
        rows = CountingRows(FileRows(path, t))
        packed = qblocks.pack(rows, kind, order)
        reference = qblocks.pack(whole if order is None else whole[order].clone(), kind)
        assert torch.equal(packed, reference), name
        assert rows.largest <= 64 < whole.shape[0]
        if native.available():
            layer = qblocks.BlockLinear(FileRows(path, t), t.shape[1], kind, order)
            assert torch.equal(layer.raw(), whole if order is None else whole[order])


def test_the_cli_prints_each_step_with_its_fraction_and_seconds_thinning_sub_steps() -> None:
    out, now = io.StringIO(), iter(float(t) for t in range(100))
    printer = LoadPrinter(out, clock=lambda: next(now))
    printer("loading tokenizer for coder", 0.0)
    for i in range(20):
        printer(f"reading x.gguf: {i}/20 tensors", 0.1 + 0.4 * i / 20)
    printer("ready", 1.0)
    lines = out.getvalue().splitlines()
    assert lines[0] == "[  0%     1.0 s] loading tokenizer for coder"
    assert lines[-1] == "[100%    22.0 s] ready"
    reading = [line for line in lines if "tensors" in line]
    assert 2 <= len(reading) <= 6  # a line a tenth of the whole, not one a tensor


def test_loading_maps_large_temporaries_and_restores_glibcs_running_thresholds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from spec_lsp.engine.weights import load_heap

    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(load_heap, "_mallopt", lambda: lambda p, v: calls.append((p, v)) or 1)
    with load_heap.mmapped_temporaries():
        inside = list(calls)
    mmap, trim = load_heap.M_MMAP_THRESHOLD, load_heap.M_TRIM_THRESHOLD
    assert inside == [(mmap, 4 << 20), (trim, 4 << 20)]
    assert calls[2:] == [(mmap, 32 << 20), (trim, 64 << 20)]
