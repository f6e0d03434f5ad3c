"""The scheduler's view of the syntax layer, with plain fallbacks when tree-sitter is absent.

This module owns calling `spec_lsp.syntax` (issue 3) defensively. A syntax error is logged and
treated as "no opinion" (multi-line mode, no stop, no trimming) so that a bug there degrades
suggestions instead of failing requests.

It also bounds the syntax layer's memory: a parsed document (text, parser, tree) costs about
100 KB for 150 lines of Python, and editors keep many documents open that are never completed in.
Only the `RESIDENT_DOCS` most recently used documents stay parsed; another one is parsed again,
from `source` (the scheduler's copy of the text), when it is next asked about.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

StopFn = Callable[[str], "int | None"]
Source = Callable[[str], "tuple[str, str] | None"]  # uri -> (languageId, text), None if closed
RESIDENT_DOCS = 32


def _load() -> tuple[Any, Any, Any]:
    try:
        from spec_lsp import syntax as mod
    except ImportError:
        return None, None, None
    return (
        getattr(mod, "SyntaxService", None),
        getattr(mod, "trim_completion", None),
        getattr(mod, "completion_mode", None),
    )


class Syntax:
    def __init__(self, service: Any = None, resident: int = RESIDENT_DOCS) -> None:
        service_cls, self._trim_completion, self._completion_mode = _load()
        if service is None and service_cls is not None:
            try:
                service = service_cls()
            except Exception:
                log.exception("syntax service failed to start; using plain rules")
        self._svc = service
        self.source: Source | None = None  # without one, every open document stays parsed
        self.resident = resident
        self._parsed: OrderedDict[str, None] = OrderedDict()  # least recently used first

    def _keep(self, uri: str) -> None:
        """Marks `uri` parsed and most recently used; closes the least recently used beyond
        `resident` in the service (their text stays with `source`)."""
        self._parsed[uri] = None
        self._parsed.move_to_end(uri)
        while self.source is not None and len(self._parsed) > self.resident:
            victim, _ = self._parsed.popitem(last=False)
            self._call("close", None, victim)

    def _ensure(self, uri: str) -> None:
        """Parses `uri` again from `source` if it was closed to save memory."""
        if uri in self._parsed:
            self._parsed.move_to_end(uri)
            return
        found = self.source(uri) if self.source is not None else None
        if found is not None:
            self.open(uri, *found)

    def _call(self, name: str, default: Any, *args: Any) -> Any:
        fn = getattr(self._svc, name, None) if self._svc is not None else None
        if fn is None:
            return default
        try:
            return fn(*args)
        except Exception:
            log.exception("syntax.%s failed", name)
            return default

    def open(self, uri: str, language_id: str, text: str) -> None:
        self._call("open", None, uri, language_id, text)
        self._keep(uri)

    def apply_edit(
        self, uri: str, start: tuple[int, int], end: tuple[int, int], new_text: str
    ) -> None:
        if uri in self._parsed:  # else parsed from the edited text when next needed
            self._call("apply_edit", None, uri, start, end, new_text)
            self._parsed.move_to_end(uri)

    def replace(self, uri: str, text: str) -> None:
        if uri in self._parsed:
            self._call("replace", None, uri, text)
            self._parsed.move_to_end(uri)

    def close(self, uri: str) -> None:
        self._parsed.pop(uri, None)
        self._call("close", None, uri)

    def is_parsed(self, uri: str) -> bool:
        return uri in self._parsed

    def mode(self, uri: str, language_id: str, prefix: str, suffix: str, row: int, col: int) -> str:
        if self._svc is not None:
            self._ensure(uri)
            return str(self._call("mode", "multi", uri, row, col))
        if self._completion_mode is not None:
            try:
                return str(self._completion_mode(language_id, prefix, suffix))
            except Exception:
                log.exception("completion_mode failed")
        return "multi"

    def context(self, uri: str, row: int, col: int) -> str:
        self._ensure(uri)
        return str(self._call("context", "", uri, row, col) or "")

    def stop_callback(self, uri: str, row: int, col: int, mode: str) -> StopFn | None:
        self._ensure(uri)
        fn = self._call("stop_callback", None, uri, row, col, mode)
        if fn is None:
            return None

        def guarded(text: str) -> int | None:
            try:
                out = fn(text)
            except Exception:
                log.exception("syntax stop callback failed")
                return None
            return None if out is None else int(out)

        return guarded

    def trim(self, uri: str, row: int, col: int, completion: str, mode: str) -> str | None:
        if self._svc is None:
            return completion
        self._ensure(uri)
        out = self._call("trim", completion, uri, row, col, completion, mode)
        return None if out is None else str(out)

    def trim_text(self, language_id: str, prefix: str, suffix: str, completion: str) -> str | None:
        if self._trim_completion is None:
            return completion
        try:
            out = self._trim_completion(language_id, prefix, suffix, completion)
        except Exception:
            log.exception("trim_completion failed")
            return completion
        return None if out is None else str(out)
