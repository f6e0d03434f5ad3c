"""`spec-lsp distill` reads back only tensors and plain values from `--out` (issue 41 item 5): a
checkout may ship `models/my-draft/head-checkpoint.pt`, and the command's own example writes
there, so a crafted pickle in a checkpoint or a cached corpus must run nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from spec_lsp.distill.loop import Checkpoint, DistillError, TrainState, load_plain

REPO = Path(__file__).resolve().parents[2]


class RunsCode:
    """Unpickled, it writes `marker`: what a crafted file in `--out` would do with more harm."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return exec, (f"open({str(self.marker)!r}, 'w').write('ran')",)


def test_a_crafted_checkpoint_in_out_runs_no_code(tmp_path: Path) -> None:
    out, marker = tmp_path / "my-draft", tmp_path / "ran"
    out.mkdir()
    crafted = {"fingerprint": "fp", "config": {}, "weights": {}, "payload": RunsCode(marker)}
    torch.save(crafted, out / "head-checkpoint.pt")
    model = torch.nn.Linear(2, 2)
    state = TrainState(model, torch.optim.AdamW(model.parameters()))
    with pytest.raises(DistillError, match="not read .*another --out"):
        Checkpoint(out / "head-checkpoint.pt", "fp", ()).load(state, {})
    assert not marker.exists()


def test_a_crafted_corpus_cache_runs_no_code(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    torch.save({"train": RunsCode(marker)}, tmp_path / "corpus.pt")
    with pytest.raises(DistillError):
        load_plain(tmp_path / "corpus.pt")
    assert not marker.exists()


def test_a_real_checkpoint_still_resumes(tmp_path: Path) -> None:
    model = torch.nn.Linear(2, 2)
    state = TrainState(model, torch.optim.AdamW(model.parameters()), step=3)
    model(torch.ones(1, 2)).sum().backward()
    state.optimizer.step()  # an optimizer with state: tensors, numbers, tuples
    state.history.append({"step": 3.0, "loss": 0.5})
    checkpoint = Checkpoint(tmp_path / "checkpoint.pt", "fp", ("lr",))
    checkpoint.save(state, {"lr": 0.001, "out": str(tmp_path), "corpus": ["a.py"]})
    other = torch.nn.Linear(2, 2)
    resumed = TrainState(other, torch.optim.AdamW(other.parameters()))
    assert checkpoint.load(resumed, {"lr": 0.001})
    assert resumed.step == 3 and resumed.history == state.history
    assert torch.equal(other.weight, model.weight)


def test_every_torch_load_in_spec_lsp_reads_weights_only() -> None:
    calls = [
        (path.relative_to(REPO), line)
        for path in (REPO / "spec_lsp").rglob("*.py")
        for line in path.read_text().splitlines()
        if re.search(r"\btorch\.load\(", line)
    ]
    assert calls, "the scan found the loader"
    assert all("weights_only=True" in line for _, line in calls), calls
