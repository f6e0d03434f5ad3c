"""Training the feature draft head (`spec_lsp.engine.head`) with the target as teacher.

The teacher is run once per training window to record its final hidden states (the features the
head reads and predicts); they are cached on disk in chunks, so an interrupted run resumes without
recomputing them, and training then costs only the head's own forward and backward. Each step
fits, on a batch of windows, (1) the next feature (smooth L1, scaled by the features' spread) and
(2) the target's next-token distribution over the head's restricted vocabulary (forward KL), once
from the target's true features (noised, as the engine's later drafts read predicted ones) and
once unrolled from the head's own predicted features (what the second draft token sees).
Held-out agreement (the head's greedy token equals the target's, true features; and unrolled one
step) is measured every `eval_every` steps. The corpus, schedule, checkpoint and run loop are
`loop`'s, shared with the decoder draft's training.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F

from spec_lsp.distill.corpus import windows
from spec_lsp.distill.loop import (
    Checkpoint,
    Teacher,
    TrainingCorpus,
    TrainState,
    cosine_lr,
    epoch_rows,
    load_corpus,
    load_plain,
    teacher_hidden,
    train,
)
from spec_lsp.engine.head import SpecHead, SpecHeadConfig, save_head

log = logging.getLogger(__name__)
CHECKPOINT = "head-checkpoint.pt"
SHAPE_KEYS = ("draft_vocab", "seq_len", "batch", "windows", "seed", "lr", "freeze_output")
CHUNK = 64  # windows per cached feature file


@dataclass
class HeadConfig:
    target: str
    corpus: list[str]
    out: str
    steps: int = 2000
    seed: int = 0
    draft_vocab: int = 8192
    seq_len: int = 256
    batch: int = 8
    windows: int = 1024  # training windows whose target features are recorded
    lr: float = 1e-3
    warmup: int = 50
    feature_weight: float = 1.0
    kd_weight: float = 1.0
    unroll_weight: float = 0.5
    noise: float = 0.1  # uniform noise on input features, relative to their spread
    weight_decay: float = 0.01
    # Keep the restricted output rows equal to the target's own: what it learns is then only the
    # next feature, and a small feature set does not over-fit the 2.4 M output weights.
    freeze_output: bool = True
    eval_every: int = 100
    checkpoint_every: int = 50
    heldout_windows: int = 16
    heldout_every: int = 50


Progress = Callable[[str, int, int, dict[str, float]], None]


def build_head(teacher: Teacher, vocab_ids: torch.Tensor, cfg: HeadConfig, source: str) -> SpecHead:
    tcfg = teacher.model.config.to_dict()
    base = SpecHeadConfig().to_dict()
    keep = {
        k: v
        for k, v in tcfg.items()
        if k in base and k not in ("model_type", "architectures", "num_hidden_layers")
    }
    keep.update(tie_word_embeddings=False, use_cache=True)
    hcfg = SpecHeadConfig(
        draft_vocab_size=len(vocab_ids),
        embed_source=source,
        target_fingerprint=teacher.fingerprint,
        **keep,
    )
    torch.manual_seed(cfg.seed)
    head = SpecHead(hcfg)
    head.init_weights()
    emb = teacher.model.get_input_embeddings().weight.detach()
    head.embed_tokens.weight = torch.nn.Parameter(emb.float().cpu(), requires_grad=False)
    out_w = teacher.model.get_output_embeddings().weight.detach().float().cpu()
    head.lm_head.weight.data.copy_(out_w[vocab_ids])
    head.vocab_ids.copy_(vocab_ids)
    return head


@torch.no_grad()
def record_features(
    teacher: Teacher,
    rows: torch.Tensor,
    cache: Path,
    progress: Progress | None = None,
    label: str = "features",
) -> torch.Tensor:
    """[N, L] windows -> [N, L, H] the target's final hidden states (float16), cached in chunks of
    CHUNK windows under `cache` so that an interrupted run resumes where it stopped."""
    cache.mkdir(parents=True, exist_ok=True)
    parts: list[torch.Tensor] = []
    device = teacher.model.device
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start : start + CHUNK]
        # Named by the windows' content: other options (windows, seed) never reuse a stale file.
        key = hashlib.sha1(chunk.numpy().tobytes()).hexdigest()[:12]
        path = cache / f"{label}-{start:06d}-{key}.pt"
        if path.exists():
            saved = load_plain(path)
            if saved.shape[:2] == chunk.shape:
                parts.append(saved)
                if progress is not None:
                    progress(label, start + len(chunk), len(rows), {})
                continue
        feats = []
        for i in range(0, len(chunk), 4):
            hid = teacher_hidden(teacher.model, chunk[i : i + 4].to(device))
            feats.append(hid.to(torch.float16).cpu())
            if progress is not None:
                progress(label, start + i + len(chunk[i : i + 4]), len(rows), {})
        block = torch.cat(feats)
        tmp = path.with_suffix(".tmp")
        torch.save(block, tmp)
        os.replace(tmp, path)
        parts.append(block)
    return torch.cat(parts)


def lr_at(step: int, cfg: HeadConfig) -> float:
    return cosine_lr(step, cfg.lr, cfg.warmup, cfg.steps, 0.05)


def batch_rows(step: int, cfg: HeadConfig, n: int) -> torch.Tensor:
    return epoch_rows(step, cfg.batch, n, cfg.seed * 7919)


def _kd(teacher_logits: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    t_logp = F.log_softmax(teacher_logits, dim=-1)
    return (t_logp.exp() * (t_logp - F.log_softmax(logits, dim=-1))).sum(-1).mean()


def loss_on(
    head: SpecHead,
    feats: torch.Tensor,
    tokens: torch.Tensor,
    scale: float,
    cfg: HeadConfig,
    generator: torch.Generator,
) -> tuple[torch.Tensor, dict[str, float]]:
    """feats [B, L, H] (float32), tokens [B, L]; pair i = (f_i, x_{i+1}) predicts f_{i+1}."""
    b, n, _ = feats.shape
    f_in, f_out, nxt = feats[:, :-1], feats[:, 1:], tokens[:, 1:]
    noise = (torch.rand(f_in.shape, generator=generator) * 2 - 1) * (cfg.noise * scale)
    pos = torch.arange(n - 1)[None].expand(b, -1)
    pred, _ = head(f_in + noise.to(f_in.device), nxt, pos.to(f_in.device))
    with torch.no_grad():
        t_logits = head.restricted_logits(f_out)
    feat = F.smooth_l1_loss(pred / scale, f_out / scale)
    kd = _kd(t_logits, head.restricted_logits(pred))
    loss = cfg.feature_weight * feat + cfg.kd_weight * kd
    parts = {"feat": feat.item(), "kd": kd.item()}
    if cfg.unroll_weight > 0 and n > 3:
        # Second draft step: pair i+1 reads the predicted f_{i+1} instead of the true one.
        pred2, _ = head(pred[:, :-1], tokens[:, 2:], pos[:, 1:].to(f_in.device))
        feat2 = F.smooth_l1_loss(pred2 / scale, f_out[:, 1:] / scale)
        kd2 = _kd(t_logits[:, 1:], head.restricted_logits(pred2))
        loss = loss + cfg.unroll_weight * (cfg.feature_weight * feat2 + cfg.kd_weight * kd2)
        parts.update(feat2=feat2.item(), kd2=kd2.item())
    parts["loss"] = loss.item()
    return loss, parts


@torch.no_grad()
def agreement(
    head: SpecHead, feats: torch.Tensor, tokens: torch.Tensor, top1: torch.Tensor
) -> dict[str, float]:
    """Share of held-out pairs where the head's greedy token equals the target's: from true
    features (`agreement`, the first draft token) and from its own predicted feature one step
    earlier (`agreement2`, the second). `top1[b, i]` is the target's greedy token after x_i."""
    head.eval()
    dev = head.device
    tokens, top1 = tokens.to(dev), top1.to(dev)
    hits = hits2 = total = total2 = 0
    for r in range(feats.shape[0]):
        f = feats[r : r + 1].to(dev).float()
        n = f.shape[1]
        pos = torch.arange(n - 1, device=dev)[None]
        pred, _ = head(f[:, :-1], tokens[r : r + 1, 1:], pos)
        got = head.vocab_ids[head.restricted_logits(pred).argmax(-1)]  # predicts x_{i+2}
        want = top1[r : r + 1, 1:]
        hits += int((got == want).sum())
        total += want.numel()
        pred2, _ = head(pred[:, :-1], tokens[r : r + 1, 2:], pos[:, 1:])
        got2 = head.vocab_ids[head.restricted_logits(pred2).argmax(-1)]
        want2 = top1[r : r + 1, 2:]
        hits2 += int((got2 == want2).sum())
        total2 += want2.numel()
    head.train()
    return {"agreement": hits / max(1, total), "agreement2": hits2 / max(1, total2)}


@dataclass
class Features:
    """The windows the head trains and is evaluated on, the target's features on them [N, L, H]
    (float16, CPU) and its greedy next tokens [N, L] (the agreement reference)."""

    train_rows: torch.Tensor
    train_feats: torch.Tensor
    held_rows: torch.Tensor
    held_feats: torch.Tensor
    held_top1: torch.Tensor
    seen_top1: torch.Tensor  # on the first training windows: the gap to held-out is over-fitting
    scale: float  # the features' spread, for the loss and the input noise


def prepare_features(
    cfg: HeadConfig, teacher: Teacher, corpus: TrainingCorpus, progress: Progress | None
) -> Features:
    out = Path(cfg.out)
    all_windows = windows(corpus.train, cfg.seq_len)
    # A seeded spread over the whole corpus, not just its first files; nested, so that a run with
    # more windows reuses the features a smaller one recorded.
    pick = torch.randperm(len(all_windows), generator=torch.Generator().manual_seed(cfg.seed))
    train_rows = all_windows[pick[: cfg.windows]]
    held_rows = windows(corpus.heldout, cfg.seq_len)[: cfg.heldout_windows]
    corpus.meta.update(feature_windows=len(train_rows), feature_tokens=int(train_rows.numel()))
    log.info("corpus: %s", corpus.meta)
    held_feats = record_features(teacher, held_rows, out / "cache" / "heldout", progress, "heldout")
    train_feats = record_features(
        teacher, train_rows, out / "cache" / "train", progress, "features"
    )
    out_w = teacher.model.get_output_embeddings().weight.detach().float().cpu()
    held_top1 = torch.stack([(f.float() @ out_w.T).argmax(-1) for f in held_feats])
    seen = min(cfg.heldout_windows, len(train_rows))
    seen_top1 = torch.stack([(f.float() @ out_w.T).argmax(-1) for f in train_feats[:seen]])
    scale = float(train_feats[:64].float().std())
    return Features(train_rows, train_feats, held_rows, held_feats, held_top1, seen_top1, scale)


def distill_head(
    cfg: HeadConfig,
    teacher: Teacher,
    source: str,
    progress: Progress | None = None,
    log_every: int = 10,
) -> TrainState:
    """Records the target's features (cached), trains (or resumes) the head up to `cfg.steps`
    and writes it to `cfg.out`."""
    out = Path(cfg.out)
    corpus = load_corpus(cfg.corpus, cfg.heldout_every, cfg.draft_vocab, teacher, out)
    f = prepare_features(cfg, teacher, corpus, progress)
    # The head trains where the teacher runs (a GPU when there is one); features stay on the CPU
    # and each batch is moved over.
    device = teacher.model.device
    head = build_head(teacher, corpus.vocab_ids, cfg, source).to(device)
    head.lm_head.weight.requires_grad_(not cfg.freeze_output)
    params = [p for p in head.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        params, lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.95)
    )
    state = TrainState(head, optimizer)

    def evaluate() -> dict[str, float]:
        scores = agreement(head, f.held_feats, f.held_rows, f.held_top1)
        seen = len(f.seen_top1)
        trained = agreement(head, f.train_feats[:seen], f.train_rows[:seen], f.seen_top1)
        scores["train_agreement"] = trained["agreement"]
        return scores

    def loss_at(step: int) -> tuple[torch.Tensor, dict[str, float]]:
        rows = batch_rows(step, cfg, len(f.train_rows))
        gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step)
        feats, tokens = f.train_feats[rows].to(device).float(), f.train_rows[rows].to(device)
        return loss_on(head, feats, tokens, f.scale, cfg, gen)

    def on_step(step: int, steps: int, record: dict[str, float]) -> None:
        if progress is not None:
            progress("train", step, steps, record)

    checkpoint = Checkpoint(out / CHECKPOINT, teacher.fingerprint, SHAPE_KEYS)
    schedule = partial(lr_at, cfg=cfg)
    train(state, cfg, asdict(cfg), checkpoint, schedule, loss_at, evaluate, on_step, log_every)
    save_head(head, out)
    (out / "corpus.json").write_text(json.dumps(corpus.meta, indent=2))
    return state
