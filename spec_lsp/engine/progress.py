"""A model load's progress: steps with their share of the whole, sub-steps inside the long ones.

`Progress` is what a caller passes in: `(message, fraction done in [0, 1])`. A load reports
through one `Steps`, which keeps the fractions it passes on from ever going back (a source's own
reporter, such as a download's or the bundled model's conversion, counts from 0 again) and maps a
step's own [0, 1] into the share the step has (`within`). The layers of a GGUF file are read deep
below the loader (`sources` -> `gguf_model`); they report through `ambient()`, the reporter the
loader set for the step around them (`scope`), rather than through every signature on the way.

Knows nothing of how a report is shown: the CLI prints it, the server sends `$/progress`, each
with the seconds since the load began.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

Progress = Callable[[str, float], None]  # (message, fraction done in [0, 1])

_AMBIENT: ContextVar[Progress | None] = ContextVar("spec_lsp_load_progress", default=None)


class Steps:
    """The one reporter of a load: fractions passed on never decrease."""

    def __init__(self, report: Progress | None) -> None:
        self.report, self.done = report, 0.0

    def __call__(self, message: str, fraction: float) -> None:
        self.done = max(self.done, min(1.0, max(0.0, fraction)))
        if self.report is not None:
            self.report(message, self.done)

    def within(self, low: float, high: float) -> Progress:
        """A reporter for a step that runs from `low` to `high` of the whole: its 0..1 mapped."""
        return lambda message, f: self(message, low + (high - low) * min(1.0, max(0.0, f)))


@contextlib.contextmanager
def scope(progress: Progress | None) -> Iterator[None]:
    """`progress` is `ambient()` while the block runs (in this thread or task)."""
    token = _AMBIENT.set(progress)
    try:
        yield
    finally:
        _AMBIENT.reset(token)


def ambient() -> Progress:
    """The reporter of the step around the caller (one that drops reports where none is set)."""
    return _AMBIENT.get() or (lambda _m, _f: None)


def counted(progress: Progress, what: str, total: int, every: int = 1) -> Callable[[int], None]:
    """A reporter of `done` out of `total` items (`what`: "tensors"), every `every` of them."""

    def report(done: int) -> None:
        if done == total or done % every == 0:
            progress(f"{what} {done}/{total}", done / max(1, total))

    return report
