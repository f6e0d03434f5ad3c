"""What both draft kinds' training shares: the teacher, the corpus, the schedule, the batch order,
the checkpoint and the run loop.

Everything depends only on the seed and the step, so a run resumed from its checkpoint continues
exactly where it stopped. A checkpoint holds the trained weights (never the target's embeddings),
the optimizer, the step and the history; resuming is refused when it was made for a target with
another tokenizer or with other values of the options that change what it means.

What a run keeps in `--out` (the checkpoint, the tokenized corpus, the target's recorded features)
is tensors and plain values, read back with `weights_only=True` (`load_plain`): `--out` may hold a
file someone else wrote (a checkout that ships `models/my-draft/head-checkpoint.pt`), and
unpickling anything else could run its code.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn

from spec_lsp.distill.corpus import build_corpus, coverage, top_tokens

log = logging.getLogger(__name__)


class DistillError(RuntimeError):
    """A distillation that cannot go on; the message says why and what to do."""


def load_plain(path: Path) -> Any:
    """What `torch.save` wrote of tensors and plain values (dicts, lists, numbers, strings),
    never unpickling anything else; a file that holds more is a DistillError."""
    try:
        return torch.load(path, weights_only=True)
    except pickle.UnpicklingError as exc:
        raise DistillError(
            f"{path} holds more than tensors and plain values, so it was not read (unpickling it "
            "could run code): remove it, or use another --out directory"
        ) from exc


@dataclass
class Teacher:
    model: Any  # the target, a transformers causal LM
    tokenizer: Any
    fingerprint: str  # `spec_lsp.engine.from_source.vocab_fingerprint` of the tokenizer


def separator_id(tokenizer: Any) -> int:
    for tok_id in (tokenizer.eos_token_id, tokenizer.bos_token_id, tokenizer.pad_token_id):
        if isinstance(tok_id, int):
            return tok_id
    return 0


@torch.no_grad()
def teacher_hidden(teacher: Any, input_ids: torch.Tensor) -> torch.Tensor:
    """[B, L] -> [B, L, H] the target's final (normed) hidden states."""
    return teacher.base_model(input_ids=input_ids, use_cache=False).last_hidden_state


def cosine_lr(step: int, lr: float, warmup: int, steps: int, floor: float) -> float:
    """Linear warm-up, then cosine decay from `lr` to `floor * lr` at `steps`."""
    if step < warmup:
        return lr * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


def epoch_rows(step: int, batch: int, n_windows: int, seed: int) -> torch.Tensor:
    """The window indices of `step`: a seeded permutation per epoch, a function of the step only."""
    epoch, offset = divmod(step * batch, n_windows)
    rows: list[int] = []
    while len(rows) < batch:
        gen = torch.Generator().manual_seed(seed + epoch)
        perm = torch.randperm(n_windows, generator=gen).tolist()
        rows.extend(perm[offset : offset + batch - len(rows)])
        epoch, offset = epoch + 1, 0
    return torch.tensor(rows)


@dataclass
class TrainingCorpus:
    """A `TokenizedCorpus` as training reads it: with the draft's restricted vocabulary."""

    train: torch.Tensor  # [N] training token ids
    heldout: torch.Tensor  # [M] held-out token ids
    vocab_ids: torch.Tensor  # [R] the draft's restricted vocabulary (full-vocabulary ids)
    meta: dict[str, Any]  # file and token counts, held-out coverage of `vocab_ids`


def load_corpus(
    sources: list[str], heldout_every: int, draft_vocab: int, teacher: Teacher, out: Path
) -> TrainingCorpus:
    """Tokenized once (cached in `out/cache/corpus.pt`), with the draft's vocabulary."""
    path = out / "cache" / "corpus.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        saved = load_plain(path)
        train, heldout, meta = saved["train"], saved["heldout"], saved["meta"]
    else:
        sep = separator_id(teacher.tokenizer)
        corpus = build_corpus(sources, teacher.tokenizer, sep, heldout_every)
        train, heldout = corpus.train, corpus.heldout
        meta = {"train_files": corpus.train_files, "heldout_files": corpus.heldout_files}
        torch.save({"train": train, "heldout": heldout, "meta": meta}, path)
    vocab_size = teacher.model.config.vocab_size
    vocab_ids = top_tokens(train, draft_vocab, vocab_size, [separator_id(teacher.tokenizer)])
    meta.update(
        train_tokens=int(train.numel()),
        heldout_tokens=int(heldout.numel()),
        vocab_coverage_heldout=coverage(heldout, vocab_ids, vocab_size),
    )
    return TrainingCorpus(train, heldout, vocab_ids, meta)


@dataclass
class TrainState:
    model: nn.Module  # the draft or head being trained
    optimizer: torch.optim.Optimizer
    step: int = 0
    history: list[dict[str, float]] = field(default_factory=list)


def trained_weights(model: nn.Module) -> dict[str, torch.Tensor]:
    """The model's state without the target's embeddings (frozen, read from the target)."""
    return {
        k: v.detach().contiguous().cpu()
        for k, v in model.state_dict().items()
        if "embed_tokens." not in k
    }


@dataclass
class Checkpoint:
    """A run's resumable file, made for one target tokenizer (`fingerprint`) and the values of
    `keys` among the run's options."""

    path: Path
    fingerprint: str
    keys: tuple[str, ...]

    def save(self, state: TrainState, options: dict[str, Any]) -> None:
        payload = {
            "step": state.step,
            "weights": trained_weights(state.model),
            "optimizer": state.optimizer.state_dict(),
            "config": options,
            "fingerprint": self.fingerprint,
            "history": state.history,
        }
        tmp = self.path.with_name(self.path.name + ".tmp")
        torch.save(payload, tmp)
        os.replace(tmp, self.path)  # atomic: an interrupted save leaves the previous one

    def load(self, state: TrainState, options: dict[str, Any]) -> bool:
        """Restores `state` from the file; False when there is none."""
        if not self.path.exists():
            return False
        saved: dict[str, Any] = load_plain(self.path)
        out = self.path.parent
        if saved["fingerprint"] != self.fingerprint:
            raise DistillError(
                f"the checkpoint in {out} was trained for a target with a different tokenizer "
                f"(vocabulary {saved['fingerprint']} vs {self.fingerprint}); use another --out "
                "directory"
            )
        changed = [k for k in self.keys if saved["config"].get(k) != options.get(k)]
        if changed:
            raise DistillError(
                f"the checkpoint in {out} was made with different options ({', '.join(changed)}); "
                "resume with the same options or use another --out directory"
            )
        state.model.load_state_dict(saved["weights"], strict=False)
        state.optimizer.load_state_dict(saved["optimizer"])
        state.step, state.history = int(saved["step"]), list(saved["history"])
        return True


class LoopConfig(Protocol):
    steps: int
    eval_every: int
    checkpoint_every: int


StepFn = Callable[[int], tuple[torch.Tensor, dict[str, float]]]  # step -> (loss, its parts)
OnStep = Callable[[int, int, dict[str, float]], None]  # (step, steps, record)


def train(
    state: TrainState,
    cfg: LoopConfig,
    options: dict[str, Any],
    checkpoint: Checkpoint,
    lr_at: Callable[[int], float],
    loss_at: StepFn,
    evaluate: Callable[[], dict[str, float]],
    on_step: OnStep | None = None,
    log_every: int = 10,
) -> None:
    """Resumes from `checkpoint` (or records the untrained evaluation), then steps up to
    `cfg.steps`: learning rate, loss, clipped update, evaluation every `eval_every` steps and
    at the end, history every `log_every`, checkpoint every `checkpoint_every` and at the end."""
    model = state.model
    params = [p for p in model.parameters() if p.requires_grad]
    if checkpoint.load(state, options):
        log.info("resumed from %s at step %d", checkpoint.path, state.step)
    else:
        state.history.append({"step": 0, **evaluate()})
    model.train()
    t0 = time.perf_counter()
    while state.step < cfg.steps:
        for group in state.optimizer.param_groups:
            group["lr"] = lr_at(state.step)
        loss, parts = loss_at(state.step)
        state.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        state.optimizer.step()
        state.step += 1
        record: dict[str, float] = {"step": state.step, **parts}
        last = state.step == cfg.steps
        if state.step % cfg.eval_every == 0 or last:
            record.update(evaluate())
        if state.step % log_every == 0 or "agreement" in record:
            record["elapsed_s"] = round(time.perf_counter() - t0, 1)
            state.history.append(record)
            log.info("step %d %s", state.step, {k: round(v, 4) for k, v in record.items()})
        if state.step % cfg.checkpoint_every == 0 or last:
            checkpoint.save(state, options)
        if on_step is not None:
            on_step(state.step, cfg.steps, record)
    model.eval()
