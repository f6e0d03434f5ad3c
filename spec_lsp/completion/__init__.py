"""Completion: what makes suggestions feel instant and never stale.

`CompletionService` (service.py) is the per-request pipeline the server calls; it orders:
- plan.py: a request's prompt, rules and cache key at a position (the one place that decides);
- known.py: answers from what is known (typed through, the running generation, the cache);
- anticipate.py: the work beyond the request (prefetch after an accept, alternatives, warm-ups);
  parts.py hands known.py and anticipate.py the service's parts;
- prefetch.py: the prefetches in flight; live.py: the running generation of each kind (request,
  alternative, prefetch, warm-up), superseded, waited for and settled;
- arrivals.py (stale-by-version, debounce), reuse.py (typing through, the answer cache),
  feedback.py (shown and accepted suggestions), history.py (recent edits), neighbours.py (other
  files' chunks), repo.py (definitions and other documents' edits in the prompt),
  editor_definitions.py (the definitions an editor's other language servers sent) and
  syntax_port.py (the one door to the syntax layer).
Nothing here imports pygls, torch or tree_sitter.
"""

from spec_lsp.completion.arrivals import Arrival
from spec_lsp.completion.feedback import Suggestion
from spec_lsp.completion.service import CompletionService

__all__ = ["Arrival", "CompletionService", "Suggestion"]
