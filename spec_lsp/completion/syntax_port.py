"""The one door from completion to `spec_lsp.syntax`: documents' trees, and one `Cut` per request.

This module owns calling the syntax layer: keeping its copies of the documents in step, asking it
for a request's `Cutter` (the mode, the stop callback and the trim at the cursor) and the prompt
context, and composing the stop callback the engine runs. Any exception from the syntax layer is
caught here, once, and answered with the syntax layer's own fallback (its language-independent
rules), so a failing parse never fails a request.

It also bounds the syntax layer's memory: a parsed document (text, parser, tree) costs about
100 KB for 150 lines of Python, and editors keep many documents open that are never completed in.
Only the `RESIDENT_DOCS` most recently used documents stay parsed; another one is parsed again,
from `source` (the service's copy of the text), when it is next asked about.

It knows nothing of tree-sitter (only the syntax layer's typed API), the model or LSP.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from spec_lsp.prompt import unlead
from spec_lsp.syntax import Block, Cutter, Mode, SyntaxService, cutter_for

log = logging.getLogger(__name__)

Source = Callable[[str], "tuple[str, str] | None"]  # uri -> (languageId, text), None if closed
RESIDENT_DOCS = 32
# A document larger than this is never parsed: tree-sitter parses on the event loop (~14 s for a
# 10 MB file on a 2-core machine, ~5 s per edit), which would stall every other request. Such a
# document gets the language-independent rules only.
MAX_PARSED_CHARS = 1_000_000
T = TypeVar("T")


@dataclass(frozen=True)
class Cut:
    """The syntax layer's rules for one request, seen past the prompt's lead.

    The prompt may leave out the last blank typed before the cursor (`Prompt.lead`); the model's
    text then begins with it, and the rules apply to what follows it. This is the one place the
    engine's stop callback is composed: the lead, then the request's `Cutter`.
    """

    cutter: Cutter
    lead: str = ""
    # Lines that mark another file in the prompt (`neighbours.markers`): a model that writes one
    # has gone on to imitate the next file, so the suggestion ends before it.
    markers: tuple[str, ...] = ()
    # The generation's token cap where the whole-block rule holds (`Planner`: `blockTokens`);
    # None: the options' `max_tokens`.
    max_tokens: int | None = None
    # The prompt's last token may be healed (`Prompt.heal`, the engine's `healing.py`).
    heal: bool = False

    def _before_marker(self, rest: str) -> int | None:
        """Where the first file marker in `rest` begins (None: no marker)."""
        padded = "\n" + rest  # a marker line at the very start counts too
        found = [at for at in (padded.find(m) for m in self.markers) if at >= 0]
        return max(0, min(found) - 1) if found else None

    @property
    def mode(self) -> Mode:
        return self.cutter.mode

    def for_cursor(self, text: str) -> str | None:
        """The model's `text` without the lead ("" while it is still the lead's start; None when
        it does not begin with the lead)."""
        return unlead(text, self.lead)

    def stop(self, text: str) -> int | None:
        """The engine's stop callback: how much of the model's `text` to keep, or None to go on.
        Stops at once when the text does not begin with the lead (it would be dropped anyway)."""
        rest = unlead(text, self.lead)
        if rest is None:
            return 0
        if not rest:
            return None
        marker = self._before_marker(rest) if self.markers else None
        if marker is not None:
            return marker + len(self.lead)
        keep = self.cutter.stop(rest)
        return None if keep is None else keep + len(self.lead)

    def trim(self, text: str, growing: bool = False, capped: bool = False) -> str | None:
        """The suggestion in the model's `text` (None: nothing to show). `growing`: `text` is
        the complete lines of a generation that goes on; `capped`: one its token cap stopped
        (`Trimmer.trim`)."""
        rest = unlead(text, self.lead)
        marker = self._before_marker(rest) if rest and self.markers else None
        if rest and marker is not None:
            rest = rest[:marker]
            growing = False  # the generation's end is decided: the final rules apply
        return self.cutter.trim(rest, growing, capped) if rest else None


class SyntaxPort:
    def __init__(self, service: SyntaxService | None = None, resident: int = RESIDENT_DOCS) -> None:
        self._svc = service if service is not None else SyntaxService()
        self.source: Source | None = None  # without one, every open document stays parsed
        self.resident = resident
        self._parsed: OrderedDict[str, None] = OrderedDict()  # least recently used first
        self._unparsed: set[str] = set()  # open documents over MAX_PARSED_CHARS

    # -- documents ----------------------------------------------------------------------------
    def open(self, uri: str, language_id: str, text: str) -> None:
        if len(text) > MAX_PARSED_CHARS:
            self.close(uri)
            self._unparsed.add(uri)
            return
        self._unparsed.discard(uri)
        self._guard("open", lambda: self._svc.open(uri, language_id, text))
        self._keep(uri)

    def apply_edit(
        self, uri: str, start: tuple[int, int], end: tuple[int, int], new_text: str
    ) -> None:
        if uri in self._parsed:  # else parsed from the edited text when next needed
            self._guard("apply_edit", lambda: self._svc.apply_edit(uri, start, end, new_text))
            self._parsed.move_to_end(uri)

    def replace(self, uri: str, text: str) -> None:
        if len(text) > MAX_PARSED_CHARS:
            self.close(uri)
            self._unparsed.add(uri)
            return
        self._unparsed.discard(uri)  # parsed from `source` when next needed
        if uri in self._parsed:
            self._guard("replace", lambda: self._svc.replace(uri, text))
            self._parsed.move_to_end(uri)

    def close(self, uri: str) -> None:
        self._unparsed.discard(uri)
        self._parsed.pop(uri, None)
        self._guard("close", lambda: self._svc.close(uri))

    def is_parsed(self, uri: str) -> bool:
        return uri in self._parsed

    # -- questions at a cursor ----------------------------------------------------------------
    def cutter(
        self, uri: str, row: int, col: int, prefix: str, suffix: str, block: Block = "off"
    ) -> Cutter:
        """The request's rules at (row, col), built once; `prefix` and `suffix` (the text around
        the cursor) only serve the fallback; `block`: whether the whole-block rule may hold."""
        self._ensure(uri)
        if uri in self._unparsed:
            return cutter_for("", prefix, suffix, block=block)
        cutter = self._guard("cutter", lambda: self._svc.cutter(uri, row, col, block))
        # No language: the syntax layer's own fallback (its language-independent rules), which
        # never raises.
        return cutter if cutter is not None else cutter_for("", prefix, suffix, block=block)

    def region(self, uri: str, first: int, last: int, reach: int) -> tuple[int, int]:
        """Lines first..last of a next edit's region, widened to syntax boundaries within
        `reach` lines; as given where there is no tree."""
        self._ensure(uri)
        if uri in self._unparsed:
            return first, last
        found = self._guard("region", lambda: self._svc.region(uri, first, last, reach))
        return found if found is not None else (first, last)

    def context(self, uri: str, row: int, col: int) -> str:
        """Declarations and headers around the cursor for the prompt ("" when none)."""
        self._ensure(uri)
        if uri in self._unparsed:
            return ""
        return self._guard("context", lambda: self._svc.context(uri, row, col)) or ""

    # -- inside -------------------------------------------------------------------------------
    def _guard(self, what: str, call: Callable[[], T]) -> T | None:
        """`call()`, or None (logged) when the syntax layer raises."""
        try:
            return call()
        except Exception:
            log.exception("syntax %s failed", what)
            return None

    def _keep(self, uri: str) -> None:
        """Marks `uri` parsed and most recently used; closes the least recently used beyond
        `resident` in the syntax layer (their text stays with `source`)."""
        self._parsed[uri] = None
        self._parsed.move_to_end(uri)
        while self.source is not None and len(self._parsed) > self.resident:
            victim, _ = self._parsed.popitem(last=False)
            self._guard("close", partial(self._svc.close, victim))

    def _ensure(self, uri: str) -> None:
        """Parses `uri` again from `source` if it was closed to save memory."""
        if uri in self._parsed:
            self._parsed.move_to_end(uri)
            return
        found = self.source(uri) if self.source is not None else None
        if found is not None:
            self.open(uri, *found)
