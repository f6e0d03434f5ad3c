"""Training the distilled decoder draft (`spec_lsp.engine.draft_model`) with the target as teacher.

Each step takes `batch` windows of the training split. The draft learns the next token of every
window (cross-entropy on the corpus, restricted vocabulary) and, on the first `teacher_rows`
windows, the target's distribution over the restricted vocabulary (forward KL), the teacher being
the expensive part. Held-out top-1 agreement with the target (the greedy acceptance rate under
teacher forcing) is measured every `eval_every` steps. The corpus, schedule, checkpoint and run
loop are `loop`'s, shared with the feature head's training.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from spec_lsp.distill.corpus import windows
from spec_lsp.distill.loop import (
    Checkpoint,
    OnStep,
    Teacher,
    TrainState,
    cosine_lr,
    epoch_rows,
    load_corpus,
    load_plain,
    teacher_hidden,
    train,
)
from spec_lsp.engine.draft_model import SpecDraftConfig, SpecDraftForCausalLM, save_draft

log = logging.getLogger(__name__)
CHECKPOINT = "checkpoint.pt"
# Options that change what a checkpoint means: resuming with others is refused.
SHAPE_KEYS = ("layers", "draft_vocab", "seq_len", "batch", "teacher_rows", "seed", "lr")


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


def lr_at(step: int, cfg: DistillConfig) -> float:
    return cosine_lr(step, cfg.lr, cfg.warmup, cfg.steps, 0.1)


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
        saved = load_plain(cache)
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


def distill(
    cfg: DistillConfig,
    teacher: Teacher,
    source: str,
    progress: OnStep | None = None,
    log_every: int = 10,
) -> TrainState:
    """Trains (or resumes) the draft in `cfg.out` up to `cfg.steps`; writes the draft files."""
    out = Path(cfg.out)
    torch.manual_seed(cfg.seed)
    corpus = load_corpus(cfg.corpus, cfg.heldout_every, cfg.draft_vocab, teacher, out)
    log.info("corpus: %s", corpus.meta)
    train_windows = windows(corpus.train, cfg.seq_len + 1)
    held_inputs, held_top1 = heldout_set(teacher, corpus.heldout, cfg, out / "cache" / "heldout.pt")
    vocab_size = teacher.model.config.vocab_size
    to_r = torch.full((vocab_size,), -100, dtype=torch.long)
    to_r[corpus.vocab_ids] = torch.arange(len(corpus.vocab_ids))

    device = teacher.model.device
    draft = build_draft(teacher, corpus.vocab_ids, cfg, source).to(device)
    to_r, held_inputs, held_top1 = to_r.to(device), held_inputs.to(device), held_top1.to(device)
    params = [p for p in draft.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0, betas=(0.9, 0.98))
    state = TrainState(draft, optimizer)

    def loss_at(step: int) -> tuple[torch.Tensor, dict[str, float]]:
        batch = train_windows[batch_rows(step, cfg, len(train_windows))].to(device)
        return loss_on(draft, teacher, batch, to_r, cfg)

    train(
        state,
        cfg,
        asdict(cfg),
        Checkpoint(out / CHECKPOINT, teacher.fingerprint, SHAPE_KEYS),
        lambda step: lr_at(step, cfg),
        loss_at,
        lambda: {"agreement": agreement(draft, held_inputs, held_top1)},
        progress,
        log_every,
    )
    save_draft(draft, out)
    (out / "corpus.json").write_text(json.dumps(corpus.meta, indent=2))
    return state
