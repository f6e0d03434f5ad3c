"""Training a draft with the target as teacher: data, loss, schedule, checkpoints, resume.

Each step takes `batch` windows of the training split. The draft learns the next token of every
window (cross-entropy on the corpus, restricted vocabulary) and, on the first `teacher_rows`
windows, the target's distribution over the restricted vocabulary (forward KL), the teacher being
the expensive part. Held-out top-1 agreement with the target (the greedy acceptance rate under
teacher forcing) is measured every `eval_every` steps. Everything depends only on the seed and
the step, so a run resumed from its checkpoint continues exactly where it stopped.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from spec_lsp.distill.corpus import build_corpus, coverage, top_tokens, windows
from spec_lsp.engine.draft_model import SpecDraftConfig, SpecDraftForCausalLM, save_draft

log = logging.getLogger(__name__)
CHECKPOINT = "checkpoint.pt"
# Options that change what a checkpoint means: resuming with others is refused.
SHAPE_KEYS = ("layers", "draft_vocab", "seq_len", "batch", "teacher_rows", "seed", "lr")


class DistillError(RuntimeError):
    """A distillation that cannot go on; the message says why and what to do."""


@dataclass
class DistillConfig:
    target: str
    corpus: list[str]
    out: str
    steps: int = 600
    seed: int = 0
    layers: int = 2
    draft_vocab: int = 4096
    seq_len: int = 256
    batch: int = 8
    teacher_rows: int = 2
    lr: float = 1e-3
    warmup: int = 30
    kd_weight: float = 1.0
    ce_weight: float = 0.5
    eval_every: int = 50
    checkpoint_every: int = 25
    heldout_windows: int = 16
    heldout_every: int = 50  # one file in this many is held out


@dataclass
class Teacher:
    model: Any  # the target, a transformers causal LM
    tokenizer: Any
    fingerprint: str


@dataclass
class TrainState:
    draft: SpecDraftForCausalLM
    optimizer: torch.optim.Optimizer
    step: int = 0
    history: list[dict[str, float]] = field(default_factory=list)


def separator_id(tokenizer: Any) -> int:
    for tok_id in (tokenizer.eos_token_id, tokenizer.bos_token_id, tokenizer.pad_token_id):
        if isinstance(tok_id, int):
            return tok_id
    return 0


@torch.no_grad()
def teacher_hidden(teacher: Any, input_ids: torch.Tensor) -> torch.Tensor:
    """[B, L] -> [B, L, H] the target's final (normed) hidden states."""
    return teacher.base_model(input_ids=input_ids, use_cache=False).last_hidden_state


@torch.no_grad()
def teacher_restricted(
    teacher: Any, input_ids: torch.Tensor, vocab_ids: torch.Tensor
) -> torch.Tensor:
    """[B, L] -> [B, L, R] the target's logits over the draft's vocabulary only (cheaper head)."""
    head = teacher.get_output_embeddings().weight[vocab_ids.to(input_ids.device)]  # [R, H]
    return teacher_hidden(teacher, input_ids) @ head.T


def build_draft(
    teacher: Teacher, vocab_ids: torch.Tensor, cfg: DistillConfig, source: str
) -> SpecDraftForCausalLM:
    """A draft initialised from the target: its embeddings (frozen), first layers, final norm and
    the restricted rows of its output layer, i.e. the target's early exit at layer `layers`."""
    tcfg = teacher.model.config.to_dict()
    keep = {
        k: v
        for k, v in tcfg.items()
        if k in SpecDraftConfig().to_dict() and k not in ("model_type", "architectures")
    }
    keep.update(num_hidden_layers=cfg.layers, tie_word_embeddings=False, use_cache=True)
    dcfg = SpecDraftConfig(
        draft_vocab_size=len(vocab_ids),
        embed_source=source,
        target_fingerprint=teacher.fingerprint,
        **keep,
    )
    torch.manual_seed(cfg.seed)
    draft = SpecDraftForCausalLM(dcfg).float()
    tstate = teacher.model.state_dict()
    dstate = draft.state_dict()
    copied = 0
    for key, value in dstate.items():
        src = tstate.get(key)
        if src is not None and src.shape == value.shape:
            value.copy_(src)
            copied += 1
    draft.vocab_ids.copy_(vocab_ids)
    draft.lm_head.weight.data.copy_(
        teacher.model.get_output_embeddings().weight[vocab_ids.to(teacher.model.device)]
    )
    draft.model.embed_tokens.weight.requires_grad_(False)
    log.info("draft initialised from the target: %d of %d tensors copied", copied, len(dstate))
    return draft


def cosine_lr(step: int, lr: float, warmup: int, steps: int, floor: float) -> float:
    """Linear warm-up, then cosine decay from `lr` to `floor * lr` at `steps`."""
    if step < warmup:
        return lr * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


def lr_at(step: int, cfg: DistillConfig) -> float:
    return cosine_lr(step, cfg.lr, cfg.warmup, cfg.steps, 0.1)


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


def batch_rows(step: int, cfg: DistillConfig, n_windows: int) -> torch.Tensor:
    return epoch_rows(step, cfg.batch, n_windows, cfg.seed * 100_003)


def loss_on(
    draft: SpecDraftForCausalLM,
    teacher: Teacher,
    batch: torch.Tensor,
    to_r: torch.Tensor,
    cfg: DistillConfig,
) -> tuple[torch.Tensor, dict[str, float]]:
    inputs, nxt = batch[:, :-1], batch[:, 1:]  # [B, L-1]
    logits = draft.restricted_logits(inputs)  # [B, L-1, R]
    labels = to_r[nxt]  # -100 where the next token is outside the restricted vocabulary
    ce = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
    loss = cfg.ce_weight * ce
    parts = {"ce": ce.item()}
    rows = min(cfg.teacher_rows, batch.shape[0])
    if rows > 0 and cfg.kd_weight > 0:
        t_logits = teacher_restricted(teacher.model, inputs[:rows], draft.vocab_ids)  # [b, L-1, R]
        t_logp = F.log_softmax(t_logits.float(), dim=-1)
        d_logp = F.log_softmax(logits[:rows], dim=-1)
        kd = (t_logp.exp() * (t_logp - d_logp)).sum(-1).mean()
        loss = loss + cfg.kd_weight * kd
        parts["kd"] = kd.item()
    parts["loss"] = loss.item()
    return loss, parts


@torch.no_grad()
def agreement(
    draft: SpecDraftForCausalLM, inputs: torch.Tensor, teacher_top1: torch.Tensor
) -> float:
    """Share of positions where the draft's greedy token equals the target's (teacher forcing)."""
    draft.eval()
    hits = total = 0
    for row in range(inputs.shape[0]):
        top = draft.vocab_ids[draft.restricted_logits(inputs[row : row + 1]).argmax(-1)]  # [1, L]
        hits += int((top == teacher_top1[row : row + 1]).sum())
        total += top.numel()
    draft.train()
    return hits / max(1, total)


@torch.no_grad()
def heldout_set(
    teacher: Teacher, heldout: torch.Tensor, cfg: DistillConfig, cache: Path
) -> tuple[torch.Tensor, torch.Tensor]:
    """Held-out windows and the target's greedy next token at each position (computed once)."""
    if cache.exists():
        saved = torch.load(cache)
        return saved["inputs"], saved["top1"]
    inputs = windows(heldout, cfg.seq_len)[: cfg.heldout_windows].to(teacher.model.device)
    head = teacher.model.get_output_embeddings().weight
    top1 = torch.cat(
        [
            (teacher_hidden(teacher.model, inputs[i : i + 1]) @ head.T).argmax(-1)
            for i in range(len(inputs))
        ]
    )
    torch.save({"inputs": inputs.cpu(), "top1": top1.cpu()}, cache)
    return inputs, top1


def write_checkpoint(payload: dict[str, Any], path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)  # atomic: an interrupted save leaves the previous one


def read_checkpoint(
    path: Path, options: dict[str, Any], fingerprint: str, keys: tuple[str, ...]
) -> dict[str, Any] | None:
    """The checkpoint at `path` (None if there is none), refused when it was made for another
    tokenizer or with other values of the `keys` options."""
    if not path.exists():
        return None
    saved: dict[str, Any] = torch.load(path, weights_only=False)
    out = path.parent
    if saved["fingerprint"] != fingerprint:
        raise DistillError(
            f"the checkpoint in {out} was trained for a target with a different tokenizer "
            f"(vocabulary {saved['fingerprint']} vs {fingerprint}); use another --out directory"
        )
    changed = [k for k in keys if saved["config"].get(k) != options.get(k)]
    if changed:
        raise DistillError(
            f"the checkpoint in {out} was made with different options ({', '.join(changed)}); "
            "resume with the same options or use another --out directory"
        )
    return saved


def save_checkpoint(state: TrainState, cfg: DistillConfig, fingerprint: str, out: Path) -> None:
    trainable = {
        k: v for k, v in state.draft.state_dict().items() if k != "model.embed_tokens.weight"
    }
    payload = {
        "step": state.step,
        "draft": trainable,
        "optimizer": state.optimizer.state_dict(),
        "config": asdict(cfg),
        "fingerprint": fingerprint,
        "history": state.history,
    }
    write_checkpoint(payload, out / CHECKPOINT)


def load_checkpoint(state: TrainState, cfg: DistillConfig, fingerprint: str, out: Path) -> bool:
    saved = read_checkpoint(out / CHECKPOINT, asdict(cfg), fingerprint, SHAPE_KEYS)
    if saved is None:
        return False
    state.draft.load_state_dict(saved["draft"], strict=False)
    state.optimizer.load_state_dict(saved["optimizer"])
    state.step, state.history = int(saved["step"]), list(saved["history"])
    return True


def load_corpus(
    sources: list[str], heldout_every: int, tokenizer: Any, path: Path
) -> tuple[torch.Tensor, torch.Tensor, dict[str, Any]]:
    """Training ids, held-out ids and their file counts: tokenized once, then read from `path`."""
    if path.exists():
        saved = torch.load(path)
        return saved["train"], saved["heldout"], saved["meta"]
    corpus = build_corpus(sources, tokenizer, separator_id(tokenizer), heldout_every)
    meta = {"train_files": corpus.train_files, "heldout_files": corpus.heldout_files}
    torch.save({"train": corpus.train, "heldout": corpus.heldout, "meta": meta}, path)
    return corpus.train, corpus.heldout, meta


Progress = Callable[[int, int, dict[str, float]], None]


def distill(
    cfg: DistillConfig,
    teacher: Teacher,
    source: str,
    progress: Progress | None = None,
    log_every: int = 10,
) -> TrainState:
    """Trains (or resumes) the draft in `cfg.out` up to `cfg.steps`; writes the draft files."""
    out = Path(cfg.out)
    (out / "cache").mkdir(parents=True, exist_ok=True)
    torch.manual_seed(cfg.seed)
    train_ids, held_ids, meta = load_corpus(
        cfg.corpus, cfg.heldout_every, teacher.tokenizer, out / "cache" / "corpus.pt"
    )
    vocab_size = teacher.model.config.vocab_size
    vocab_ids = top_tokens(
        train_ids, cfg.draft_vocab, vocab_size, [separator_id(teacher.tokenizer)]
    )
    meta.update(
        train_tokens=int(train_ids.numel()),
        heldout_tokens=int(held_ids.numel()),
        vocab_coverage_heldout=coverage(held_ids, vocab_ids, vocab_size),
    )
    log.info("corpus: %s", meta)
    train_windows = windows(train_ids, cfg.seq_len + 1)
    held_inputs, held_top1 = heldout_set(teacher, held_ids, cfg, out / "cache" / "heldout.pt")
    to_r = torch.full((vocab_size,), -100, dtype=torch.long)
    to_r[vocab_ids] = torch.arange(len(vocab_ids))

    device = teacher.model.device
    draft = build_draft(teacher, vocab_ids, cfg, source).to(device)
    to_r, held_inputs, held_top1 = to_r.to(device), held_inputs.to(device), held_top1.to(device)
    params = [p for p in draft.parameters() if p.requires_grad]
    state = TrainState(
        draft, torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0, betas=(0.9, 0.98))
    )
    resumed = load_checkpoint(state, cfg, teacher.fingerprint, out)
    if resumed:
        log.info("resumed from %s at step %d", out / CHECKPOINT, state.step)
    else:
        state.history.append({"step": 0, "agreement": agreement(draft, held_inputs, held_top1)})
    draft.train()
    t0 = time.perf_counter()
    while state.step < cfg.steps:
        for group in state.optimizer.param_groups:
            group["lr"] = lr_at(state.step, cfg)
        batch = train_windows[batch_rows(state.step, cfg, len(train_windows))].to(device)
        loss, parts = loss_on(draft, teacher, batch, to_r, cfg)
        state.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        state.optimizer.step()
        state.step += 1
        record: dict[str, float] = {"step": state.step, **parts}
        if state.step % cfg.eval_every == 0 or state.step == cfg.steps:
            record["agreement"] = agreement(draft, held_inputs, held_top1)
        if state.step % log_every == 0 or "agreement" in record:
            record["elapsed_s"] = round(time.perf_counter() - t0, 1)
            state.history.append(record)
            log.info("step %d %s", state.step, {k: round(v, 4) for k, v in record.items()})
        if state.step % cfg.checkpoint_every == 0 or state.step == cfg.steps:
            save_checkpoint(state, cfg, teacher.fingerprint, out)
        if progress is not None:
            progress(state.step, cfg.steps, record)
    draft.eval()
    save_draft(draft, out)
    (out / "corpus.json").write_text(json.dumps(meta, indent=2))
    return state
