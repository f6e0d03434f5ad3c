"""`Cutter`: everything the completion side needs at one cursor, built once per request.

`mode` says whether and how much to complete; `stop(text)` is the engine's stop callback (how
much of the text to keep, or None to go on); `trim(text)` is the suggestion to show (None: show
nothing); `block` says whether the whole-block rule holds (`block.py`: the generation may run
to the block's end). `stop` and `trim` follow the same rules, so stopping early gives the same
suggestion as trimming after. Neither raises: a bug in the rules falls back to `plain_cutter`, the
language-independent rules, which is also what an unknown document gets. This module is the one
place that fallback is defined.
"""

from __future__ import annotations

import logging
import threading
from contextlib import AbstractContextManager, nullcontext

from spec_lsp.syntax.block import Block
from spec_lsp.syntax.languages import PLAIN, spec_for
from spec_lsp.syntax.trim import Trimmer
from spec_lsp.syntax.units import Mode

log = logging.getLogger(__name__)


class Cutter:
    """The mode, stop callback and trim at one cursor. `lock` guards the parser the trim's parse
    check uses when that parser belongs to a shared document."""

    def __init__(
        self,
        trimmer: Trimmer,
        lock: threading.RLock | None = None,
        *,
        fallback: Cutter | None = None,
    ) -> None:
        self._trimmer = trimmer
        self._lock: AbstractContextManager[object] = lock if lock is not None else nullcontext()
        self._fallback = fallback
        self.mode: Mode = trimmer.mode
        self.block: bool = trimmer.block

    def stop(self, text: str) -> int | None:
        """How much of `text` to keep once the suggestion is complete, else None (go on)."""
        try:
            return self._trimmer.stop(text)
        except Exception:
            log.exception("syntax stop callback failed")
            return self._fallback.stop(text) if self._fallback is not None else None

    def trim(self, text: str, growing: bool = False, capped: bool = False) -> str | None:
        """The part of `text` to show at the cursor, or None (`growing`, `capped`:
        `Trimmer.trim`)."""
        try:
            with self._lock:
                return self._trimmer.trim(text, growing, capped)
        except Exception:
            log.exception("syntax trim failed")
            if self._fallback is not None:
                return self._fallback.trim(text, growing, capped)
            kept = text.rstrip()
            return kept if kept.strip() else None


def plain_cutter(
    prefix: str = "", suffix: str = "", mode: Mode | None = None, block: Block = "off"
) -> Cutter:
    """The language-independent rules only (suffix overlap, repetition, bracket balance, the end
    of a block by its indentation; no parse): for an unknown document or language, or when the
    language's own rules fail."""
    return Cutter(Trimmer(PLAIN, prefix, suffix, mode, parser=None, block=block))


def cutter_for(
    language_id: str,
    prefix: str,
    suffix: str,
    *,
    mode: Mode | None = None,
    comments: bool = True,
    block: Block = "off",
) -> Cutter:
    """A cutter for a text-only caller (`spec-lsp trim`, tests): the cursor between `prefix` and
    `suffix` in a document of `language_id` (an LSP languageId or a file name). `mode` overrides
    the mode decided from the text; `block`: whether the whole-block rule may hold."""
    try:
        fallback = plain_cutter(prefix, suffix, mode, block)
    except Exception:
        log.exception("plain syntax rules failed")
        fallback = plain_cutter(mode=mode)
    try:
        spec = spec_for(language_id)
        if spec.name == PLAIN.name:
            return fallback
        trimmer = Trimmer(spec, prefix, suffix, mode, comments=comments, block=block)
        return Cutter(trimmer, fallback=fallback)
    except Exception:
        log.exception("syntax rules failed for %s", language_id)
        return fallback


__all__ = ["Cutter", "cutter_for", "plain_cutter"]
