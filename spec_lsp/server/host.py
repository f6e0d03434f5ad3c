"""What every client of one server process shares: the models, and who is connected.

A stdio server has one client; a shared server (`serve --tcp/--socket`) has one per editor window
connected at once, each with a `SpecServer` (its protocol, options and `ClientSession`) of its
own. They share one `ModelHost`: one inference worker, so one model pair in memory and one set of
CPU threads, what that pair was loaded for, and the names of the clients connected (their worker
lanes: `worker_lane.py`). One client's request to load another preset while others use the models
is refused (`others`): a window never changes the model under another.

It knows nothing of LSP (language_server.py) or of sockets (transport.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import Callable

from spec_lsp.config import MODEL_FIELDS, Options
from spec_lsp.worker import InferenceWorker, Loader

LoaderFactory = Callable[[Options], Loader]
MAX_CLIENTS = 16  # clients served at once by a shared server; one more is refused


class ModelHost:
    def __init__(self, loader: LoaderFactory) -> None:
        self.loader = loader
        self.worker: InferenceWorker | None = None
        self.loaded = asyncio.Event()  # set while no load is in progress (after the first)
        self.models: Options | None = None  # the options the last load was asked with
        self.clients: set[str] = set()  # the names of the clients with a session
        self._names = (f"c{n}" for n in itertools.count(1))
        self.progress_ids = itertools.count(1)

    @property
    def models_key(self) -> tuple[object, ...] | None:
        return None if self.models is None else self.models.model_key()

    def start_worker(self, loop: asyncio.AbstractEventLoop) -> InferenceWorker:
        """The worker, started by the first client's `initialize`; later ones share it."""
        if self.worker is None:
            self.worker = InferenceWorker(loop)
        return self.worker

    def join(self) -> str:
        """A name for a new client's session, unique for the process's life."""
        name = next(self._names)
        self.clients.add(name)
        return name

    def leave(self, name: str) -> None:
        self.clients.discard(name)

    def others(self, name: str | None) -> int:
        """How many clients other than `name` are connected."""
        return len(self.clients - {name})

    def with_models(self, options: Options) -> Options:
        """`options` with the model settings (preset, device, ...) of the models loaded."""
        if self.models is None:
            return options
        kept = {field: getattr(self.models, field) for field in MODEL_FIELDS}
        return dataclasses.replace(options, **kept)
