"""The training corpus: source files, a held-out split by file, token windows, the draft vocabulary.

Files are split by a hash of their path (stable across machines and runs), tokenized with the
target's tokenizer, joined with the end-of-text token between files and cut into fixed windows.
The draft's restricted vocabulary is the most frequent tokens of the training split. Knows nothing
about models.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

SOURCE_SUFFIXES = (
    ".py",
    ".pyi",
    ".js",
    ".ts",
    ".tsx",
    ".jsx",
    ".rs",
    ".go",
    ".java",
    ".c",
    ".h",
    ".cc",
    ".cpp",
    ".hpp",
    ".rb",
    ".lua",
    ".sh",
    ".toml",
    ".md",
)
MAX_FILE_BYTES = 400_000  # generated tables and data dumps teach a draft nothing useful


class CorpusError(ValueError):
    """A corpus that yields no usable files; the message is fit for a user."""


def find_files(sources: Iterable[str], exclude: Iterable[str] = ("site-packages",)) -> list[Path]:
    """Source files under each directory (recursively) or given directly, sorted, deduplicated."""
    skip = tuple(exclude)
    found: set[Path] = set()
    for source in sources:
        path = Path(source).expanduser()
        if path.is_file():
            found.add(path.resolve())
        elif path.is_dir():
            for f in path.rglob("*"):
                parts = f.relative_to(path).parts
                if (
                    f.suffix in SOURCE_SUFFIXES
                    and f.is_file()
                    and not any(s in parts for s in skip)
                ):
                    found.add(f.resolve())
        else:
            raise CorpusError(f"corpus path {source} does not exist")
    files = sorted(f for f in found if 0 < f.stat().st_size <= MAX_FILE_BYTES)
    if not files:
        raise CorpusError(
            f"no source files ({', '.join(SOURCE_SUFFIXES[:6])}, ...) "
            f"found in {', '.join(map(str, sources))}"
        )
    return files


def is_heldout(path: Path, root: Path | None, every: int) -> bool:
    """A stable 1-in-`every` split by the file's path (relative to the corpus root when given)."""
    key = (
        str(path.relative_to(root)) if root is not None and path.is_relative_to(root) else path.name
    )
    return int(hashlib.sha1(key.encode()).hexdigest()[:8], 16) % every == 0


@dataclass
class TokenizedCorpus:
    """The source files as token ids, split into training and held-out files (`build_corpus`)."""

    train: torch.Tensor  # [N] int64 token ids, files joined by the separator
    heldout: torch.Tensor  # [M]
    train_files: int
    heldout_files: int


def tokenize_files(
    files: list[Path], tokenizer: Any, separator: int, progress: Any = None
) -> torch.Tensor:
    ids: list[int] = []
    batch = 64
    for start in range(0, len(files), batch):
        texts = [
            f.read_text(encoding="utf-8", errors="replace") for f in files[start : start + batch]
        ]
        for enc in tokenizer(texts, add_special_tokens=False)["input_ids"]:
            ids.extend(enc)
            ids.append(separator)
        if progress is not None:
            progress(min(start + batch, len(files)), len(files))
    return torch.tensor(ids, dtype=torch.long)


def build_corpus(
    sources: list[str],
    tokenizer: Any,
    separator: int,
    heldout_every: int = 50,
    progress: Any = None,
) -> TokenizedCorpus:
    files = find_files(sources)
    roots = [Path(s).expanduser().resolve() for s in sources if Path(s).expanduser().is_dir()]

    def root_of(f: Path) -> Path | None:
        return next((r for r in roots if f.is_relative_to(r)), None)

    held = [f for f in files if is_heldout(f, root_of(f), heldout_every)]
    train = [f for f in files if not is_heldout(f, root_of(f), heldout_every)]
    if not train:
        raise CorpusError("the corpus is too small: every file fell into the held-out split")
    if not held:  # a tiny corpus: hold out its last file rather than nothing
        held, train = train[-1:], train[:-1] or train
    all_ids = tokenize_files(train + held, tokenizer, separator, progress)
    n_train = sum(1 for _ in train)
    # Split the joined stream at the boundary between the two file lists.
    sep_positions = (all_ids == separator).nonzero().flatten()
    cut = int(sep_positions[n_train - 1]) + 1 if n_train > 0 else 0
    return TokenizedCorpus(all_ids[:cut], all_ids[cut:], len(train), len(held))


def windows(ids: torch.Tensor, length: int) -> torch.Tensor:
    """[N] -> [N // length, length] non-overlapping windows (the ragged tail is dropped)."""
    n = ids.numel() // length
    if n == 0:  # a stream shorter than one window: repeat it to fill one
        reps = length // max(1, ids.numel()) + 1
        return ids.repeat(reps)[:length][None]
    return ids[: n * length].view(n, length)


def top_tokens(
    ids: torch.Tensor, size: int, vocab_size: int, always: Iterable[int] = ()
) -> torch.Tensor:
    """The `size` most frequent ids (ties broken by id), plus `always`; sorted ascending."""
    counts = torch.bincount(ids, minlength=vocab_size)[:vocab_size]
    must = sorted({i for i in always if 0 <= i < vocab_size})
    counts[must] = -1
    size = min(size, vocab_size)
    order = torch.sort(counts, descending=True, stable=True).indices  # ties: lower id first
    picked = order[: max(0, size - len(must))].tolist()
    return torch.tensor(sorted(set(picked) | set(must)), dtype=torch.long)


def coverage(ids: torch.Tensor, vocab_ids: torch.Tensor, vocab_size: int) -> float:
    inside = torch.zeros(vocab_size, dtype=torch.bool)
    inside[vocab_ids] = True
    return float(inside[ids].float().mean()) if ids.numel() else 0.0
