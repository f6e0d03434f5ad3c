"""Trimming a raw completion to the syntactic unit at the cursor, and its streaming form.

`Trimmer` is built once per request (language, text around the cursor, mode). `trim(text)` applies
the text-only cuts of `spec_lsp.syntax.units`, then, among the boundaries left (line ends, just
after `)]};`), takes the longest of those whose insertion leaves the fewest parse errors (so it
adds no parse error that the file or a shorter boundary did not already have), then drops trailing whitespace; an empty result is None ("show nothing").
`stop(text)` is the engine's stop callback: the text-only cut, rerun only when the new text could
have ended the unit. The result is always a prefix of the completion.
"""

from __future__ import annotations

from tree_sitter import Parser, Tree

from spec_lsp.syntax.cursor import cursor_of
from spec_lsp.syntax.languages import LanguageSpec, new_parser, spec_for
from spec_lsp.syntax.mode import inside, mode_of
from spec_lsp.syntax.parsecheck import ErrorProbe, make_probe
from spec_lsp.syntax.units import Cut, Mode, Plan, hard_cut, make_plan

_TRIGGERS = frozenset("\n)]};,:\"'`")
MAX_CANDIDATES = 64


class Trimmer:
    def __init__(
        self,
        spec: LanguageSpec,
        prefix: str,
        suffix: str,
        mode: Mode | None = None,
        *,
        tree: Tree | None = None,
        parser: Parser | None = None,
        comments: bool = True,
    ) -> None:
        self.spec = spec
        self._prefix, self._suffix = prefix, suffix
        self._parser = parser if parser is not None else new_parser(spec)
        self._tree = tree
        cursor = cursor_of(prefix, suffix)
        if self._parser is not None and self._tree is None:
            self._tree = self._parser.parse(_encode(prefix + suffix))
        where = inside(spec, cursor, self._tree, len(_encode(prefix)) if self._tree else 0)
        self.mode: Mode = mode if mode is not None else mode_of(spec, cursor, where, comments)
        self.plan: Plan = make_plan(spec, cursor, self.mode, where.string)
        self._probe: ErrorProbe | None = None
        self._seen = 0

    # -- the final trim ------------------------------------------------------------------------

    def trim(self, completion: str) -> str | None:
        if self.mode == "none" or not completion.strip():
            return None
        cut = hard_cut(self.plan, completion, final=True)
        text = completion[: cut.pos]
        end = self._best_boundary(text, cut)
        kept = text[:end].rstrip()
        return kept if kept.strip() else None

    def _best_boundary(self, text: str, cut: Cut) -> int:
        if self._parser is None or not text.strip():
            return len(text)
        candidates = sorted({c for c in _boundaries(text, cut) if text[:c].strip()}, reverse=True)[
            :MAX_CANDIDATES
        ]
        if not candidates:
            return len(text)
        # The fewest parse errors, and the longest candidate among those: a longer candidate
        # with more errors than a shorter one added them, even if the total stays at the
        # file's baseline (it fixed an old error and made a new one).
        probe = self._get_probe()
        best, best_errors = candidates[0], None
        for end in candidates:  # longest first
            errors = probe.errors(text[:end].rstrip())
            if best_errors is None or errors < best_errors:
                best, best_errors = end, errors
            if errors == 0:
                break
        return best

    def _get_probe(self) -> ErrorProbe:
        if self._probe is None:
            assert self._parser is not None
            self._probe = make_probe(self._parser, self._prefix, self._suffix, self._tree)
        return self._probe

    # -- the streaming stop callback -----------------------------------------------------------

    def stop(self, text: str) -> int | None:
        """How much of `text` to keep when the unit is complete, else None (keep generating)."""
        if self.mode == "none":
            return 0
        new = text[self._seen :] if len(text) >= self._seen else text
        self._seen = len(text)
        if not _may_end(self.plan, text, new):
            return None
        cut = hard_cut(self.plan, text, final=False)
        if not cut.complete:
            return None
        return len(text[: cut.pos if cut.stop_at is None else cut.stop_at].rstrip())


def _may_end(plan: Plan, text: str, new: str) -> bool:
    """Cheap test: could the text that just arrived have ended the unit?"""
    if not new:
        return False
    if any(ch in _TRIGGERS for ch in new):
        return True
    # In multi-line mode a line's first visible character decides a dedent.
    return plan.unit != "line" and "\n" in text and not new.isspace()


def _boundaries(text: str, cut: Cut) -> set[int]:
    ends = {len(text)}
    ends.update(line.end for line in cut.scan.lines if line.end <= len(text))
    ends.update(b for b in cut.scan.boundaries if b <= len(text))
    ends.update(e for e in cut.extra if e <= len(text))
    return ends


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


# -- stateless entry points -------------------------------------------------------------------


def completion_mode(language_id: str, prefix: str, suffix: str) -> str:
    """ "none", "single" or "multi" at the cursor between `prefix` and `suffix`; never raises."""
    try:
        return Trimmer(spec_for(language_id), prefix, suffix).mode
    except Exception:  # a bug here must not take suggestions down: fall back to one line
        return "single"


def trim_completion(
    language_id: str, prefix: str, suffix: str, completion: str, mode: str | None = None
) -> str | None:
    """The part of `completion` to show at the cursor, or None; never raises."""
    try:
        trimmer = Trimmer(spec_for(language_id), prefix, suffix, _as_mode(mode))
        return trimmer.trim(completion)
    except Exception:
        return _fallback(completion)


def _as_mode(mode: str | None) -> Mode | None:
    if mode in ("none", "single", "multi"):
        return mode  # type: ignore[return-value]
    return None


def _fallback(completion: str) -> str | None:
    line = completion.split("\n", 1)[0].rstrip()
    return line if line.strip() else None


__all__ = ["Trimmer", "completion_mode", "trim_completion"]
