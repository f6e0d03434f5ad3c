"""The service's parts that answering from what is known and anticipating requests share.

`Known` (`known.py`) and `Anticipation` (`anticipate.py`) work on the same documents, answer
cache, generations and prefetches as the service that orders them; the service builds them once
and hands them in as one `Parts`. This module owns no state of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from spec_lsp.completion.feedback import Feedback
from spec_lsp.completion.live import Generations
from spec_lsp.completion.neighbours import Neighbours
from spec_lsp.completion.plan import Planner
from spec_lsp.completion.prefetch import Prefetch
from spec_lsp.completion.reuse import Reuse
from spec_lsp.config import Options
from spec_lsp.documents import DocumentStore
from spec_lsp.stats import ServerStats


@dataclass(frozen=True)
class Parts:
    docs: DocumentStore
    reuse: Reuse  # the documents' last suggestions and the answer cache
    live: Generations
    prefetch: Prefetch
    planner: Planner  # a request's plan at a position
    feedback: Feedback  # issues suggestions (ids)
    neighbours: Neighbours  # other files' chunks
    stats: ServerStats
    options: Callable[[], Options]  # the service's current options
