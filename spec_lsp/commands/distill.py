"""`spec-lsp distill`: train a small draft for a target on source code, with the target as teacher.

    spec-lsp distill --target bundled --corpus ~/src/project --out models/my-draft --steps 600

Writes `--out/config.json` (naming the target and a hash of its vocabulary: no copy of its
tokenizer), `model.safetensors` (the draft's own weights; the embeddings are the target's, read at
load time), the checkpoint (`head-checkpoint.pt` or `checkpoint.pt`; resumable: run the same
command again to continue) and `report.json` (held-out acceptance, draft cost, expected and
measured speedup).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "distill",
        help="train a small draft model for a target on your code",
        description="Distil a draft (target embeddings, few layers, restricted output vocabulary) "
        "from a target model on a source-code corpus. Resumable: rerun the same command.",
    )
    p.add_argument("--target", required=True, help="a preset name (e.g. bundled) or a model source")
    p.add_argument("--corpus", required=True, nargs="+", help="directories or files of source code")
    p.add_argument(
        "--out", required=True, help="output directory for the draft, checkpoint and report"
    )
    p.add_argument(
        "--arch",
        choices=("head", "decoder"),
        default="head",
        help="head: a one-layer feature head that drafts from the target's hidden states "
        "(EAGLE-style, the default); decoder: a small decoder over the target's embeddings",
    )
    p.add_argument(
        "--steps", type=int, default=None, help="training steps (default: head 1500, decoder 600)"
    )
    p.add_argument("--device", default="auto", help="auto, cpu or cuda (default auto)")
    p.add_argument("--seed", type=int, default=0, help="seeds the draft's weights and the windows")
    p.add_argument("--layers", type=int, default=2, help="decoder layers of the draft (default 2)")
    p.add_argument(
        "--draft-vocab", type=int, default=4096, help="size of the draft's output vocabulary"
    )
    p.add_argument("--seq-len", type=int, default=256, help="tokens in one training window")
    p.add_argument("--batch", type=int, default=None, help="windows per step (head 4, decoder 8)")
    p.add_argument(
        "--windows",
        type=int,
        default=768,
        help="head: training windows whose target features are recorded (default 768)",
    )
    p.add_argument(
        "--teacher-rows", type=int, default=2, help="windows per batch scored by the target"
    )
    p.add_argument("--lr", type=float, default=1e-3, help="peak learning rate (AdamW, cosine)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--no-report", action="store_true", help="skip the acceptance/speed report")
    p.add_argument(
        "--trust-remote-code", action="store_true", help="run a hub target's own Python code"
    )
    p.set_defaults(func=run)


def _resolve_target(name: str) -> tuple[str, str]:
    """(source for loading, dtype name on CPU) from a preset name or a model source."""
    from spec_lsp.presets import PresetError, load_preset, preset_files

    if name in preset_files() or name.endswith(".toml") or name == "tiny":
        try:
            preset = load_preset(name)
        except PresetError:
            raise
        return preset.resolve(preset.target), preset.dtype.get("cpu", "float32")
    return name, "float32"


def run(args: argparse.Namespace) -> int:
    import torch

    from spec_lsp.distill.corpus import CorpusError
    from spec_lsp.distill.loop import DistillError
    from spec_lsp.engine.loading import ModelLoadError
    from spec_lsp.presets import PresetError

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stdout)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    bars: dict[str, Any] = {}
    try:
        teacher, source = _teacher(args)
        train = _train_head if args.arch == "head" else _train_decoder
        history = train(args, teacher, source, Bars(bars))
        for bar in bars.values():
            bar.close()
        if args.no_report:
            return 0
        from spec_lsp.distill.report import write_report

        report = write_report(Path(args.out), teacher, source, history)
    except (ModelLoadError, PresetError, CorpusError, DistillError) as exc:
        print(f"spec-lsp distill: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(report["summary"], indent=2))
    return 0


class Bars:
    """One progress bar per stage (feature recording, held-out features, training)."""

    def __init__(self, bars: dict[str, Any]) -> None:
        self.bars = bars

    def __call__(self, stage: str, done: int, total: int, record: dict[str, float]) -> None:
        from tqdm import tqdm

        bar = self.bars.get(stage)
        if bar is None:
            unit = "step" if stage in ("train", "distill") else "window"
            bar = self.bars[stage] = tqdm(total=total, desc=stage, unit=unit, mininterval=5.0)
        bar.n = done
        shown = {k: round(v, 3) for k, v in record.items() if k in ("loss", "agreement")}
        if shown:
            bar.set_postfix(shown, refresh=False)
        bar.refresh()


def _teacher(args: argparse.Namespace) -> tuple[Any, str]:
    import torch

    from spec_lsp.distill.loop import Teacher
    from spec_lsp.engine.from_source import (
        load_model,
        load_tokenizer,
        pick_device,
        vocab_fingerprint,
    )

    source, _ = _resolve_target(args.target)
    device = pick_device(args.device)
    tokenizer = load_tokenizer(source, args.trust_remote_code)
    model = load_model(source, device, torch.float32, args.trust_remote_code)
    model.requires_grad_(False)
    return Teacher(model, tokenizer, vocab_fingerprint(tokenizer)), source


def _train_decoder(
    args: argparse.Namespace, teacher: Any, source: str, bars: Bars
) -> list[dict[str, float]]:
    """`--arch decoder`: a small decoder over the target's embeddings."""
    from spec_lsp.distill.train import DistillConfig, distill

    cfg = DistillConfig(
        target=args.target,
        corpus=list(args.corpus),
        out=args.out,
        steps=args.steps or 600,
        seed=args.seed,
        layers=args.layers,
        draft_vocab=args.draft_vocab,
        seq_len=args.seq_len,
        batch=args.batch or 8,
        teacher_rows=args.teacher_rows,
        lr=args.lr,
    )
    state = distill(cfg, teacher, source, lambda s, t, r: bars("distill", s, t, r))
    return state.history


def _train_head(
    args: argparse.Namespace, teacher: Any, source: str, bars: Bars
) -> list[dict[str, float]]:
    """`--arch head`: record the target's features, train the head."""
    from spec_lsp.distill.head_train import HeadConfig, distill_head

    cfg = HeadConfig(
        target=args.target,
        corpus=list(args.corpus),
        out=args.out,
        steps=args.steps or 1500,
        seed=args.seed,
        draft_vocab=args.draft_vocab,
        seq_len=args.seq_len,
        batch=args.batch or 4,
        windows=args.windows,
        lr=args.lr,
    )
    return distill_head(cfg, teacher, source, bars).history
