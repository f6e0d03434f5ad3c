"""What every drafter gives the engine: a `Proposal` of tokens, and the `Drafter` protocol.

Its own module so that the gate (`gate.py`, which prices proposals) and the drafters
(`drafters.py`, which the gate's prices steer) import it, not each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import torch

if TYPE_CHECKING:
    from spec_lsp.engine.cache import DraftState


@dataclass
class Proposal:
    tokens: list[int]
    probs: torch.Tensor | None = None  # [k, Vd] draft distributions; None: deterministic proposal
    source: str = ""
    steps: int = 0  # draft passes run (model or head); 0 for a lookup


class Drafter(Protocol):
    name: str

    def propose(
        self,
        context: list[int],
        k: int,
        draft_state: DraftState | None,
        temperature: float,
        generator: torch.Generator | None,
    ) -> Proposal: ...
