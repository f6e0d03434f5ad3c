"""Completion: what makes suggestions feel instant and never stale.

`CompletionService` (service.py) is the per-request pipeline the server calls; around it,
arrivals.py (stale-by-version, debounce), reuse.py (typing through, the answer cache), live.py
(the running generation), feedback.py (shown and accepted suggestions) and syntax_port.py (the one
door to the syntax layer). Nothing here imports pygls, torch or tree_sitter.
"""

from spec_lsp.completion.arrivals import Arrival
from spec_lsp.completion.feedback import Suggestion
from spec_lsp.completion.service import CompletionService

__all__ = ["Arrival", "CompletionService", "Suggestion"]
