"""Code-completion prompts cut from real source files on this machine (the Python standard library).

Deterministic: the same files and cut points on every run. Each prompt ends inside a function
body at the start of a line, as a user's cursor would, with up to `max_chars` of the file above.
"""

from __future__ import annotations

import random
import sysconfig
from dataclasses import dataclass
from pathlib import Path

# Modules of the standard library, chosen for ordinary application-style code.
STDLIB_FILES = (
    "json/encoder.py",
    "csv.py",
    "textwrap.py",
    "argparse.py",
    "shlex.py",
    "difflib.py",
    "pprint.py",
    "string.py",
    "calendar.py",
    "fractions.py",
    "configparser.py",
    "heapq.py",
)


@dataclass(frozen=True)
class BenchPrompt:
    name: str  # file:line
    text: str


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def cut_points(source: str, rng: random.Random, count: int) -> list[int]:
    """Line starts inside indented bodies (a cursor at the start of a statement)."""
    lines = source.splitlines(keepends=True)
    offsets, pos = [], 0
    for i, line in enumerate(lines):
        stripped = line.strip()
        indented = (
            line.startswith("        ") and stripped and not stripped.startswith(("#", '"', "'"))
        )
        if i > 40 and indented:
            offsets.append(pos + (len(line) - len(line.lstrip())))
        pos += len(line)
    rng.shuffle(offsets)
    return sorted(offsets[:count])


def bench_prompts(count: int = 12, max_chars: int = 2400, seed: int = 0) -> list[BenchPrompt]:
    rng = random.Random(seed)
    root = stdlib_dir()
    prompts: list[BenchPrompt] = []
    files = [root / f for f in STDLIB_FILES if (root / f).exists()]
    per_file = max(1, -(-count // max(1, len(files))))
    for path in files:
        source = path.read_text(encoding="utf-8")
        for offset in cut_points(source, rng, per_file):
            line = source.count("\n", 0, offset) + 1
            prompts.append(
                BenchPrompt(
                    f"{path.relative_to(root)}:{line}", source[max(0, offset - max_chars) : offset]
                )
            )
    return prompts[:count]
