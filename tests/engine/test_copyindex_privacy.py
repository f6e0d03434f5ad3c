"""The copy index holds only what the completion layer sends the engine: never a private or
excluded file's text, and nothing of a document once it is closed."""

from __future__ import annotations

import asyncio
import threading

from spec_lsp.completion import CompletionService
from spec_lsp.config import Options
from spec_lsp.engine.engine import SpecEngine
from spec_lsp.worker import InferenceWorker, engine_loader
from tests.fakes import end
from tests.remote.fake_engine import Clock

SECRET = "file:///w/.env"
EXCLUDED = "file:///w/vendor/keys.py"
CODE = "file:///w/main.py"
SECRET_TEXT = "API_TOKEN=zq81-kestrel-violet-9931\nDB_PASSWORD=marmot-quartz-4477\n"
EXCLUDED_TEXT = "SIGNING_KEY = 'plover-ochre-5521'\n"
CODE_TEXT = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return "


async def drained(worker: InferenceWorker) -> None:
    """Waits until the worker has run every job queued before this one."""
    done = threading.Event()
    worker.call(lambda backend: done.set())
    assert await asyncio.to_thread(done.wait, 60)


def holds(engine: SpecEngine, text: str) -> bool:
    """Whether any source of the index holds `text`'s tokens in a row (its first line's)."""
    ids = engine.encode(text.split("\n")[0])[1:]  # its first token may merge with what precedes
    n = len(ids)
    for source in engine.copies.sources.values():
        tokens = source.tokens.tolist()
        if any(tokens[i : i + n] == ids for i in range(len(tokens) - n + 1)):
            return True
    return False


async def test_private_and_excluded_files_never_reach_the_index_and_closed_ones_leave_it() -> None:
    worker = InferenceWorker(asyncio.get_running_loop())
    loaded = asyncio.Event()
    options = Options(
        preset="tiny", device="cpu", max_tokens=8, prefetch=False, exclude=("*/vendor/*",)
    )
    worker.load("tiny", engine_loader(options), lambda m, f: None, loaded.set)
    await asyncio.wait_for(loaded.wait(), 300)
    engine = worker.backend
    assert isinstance(engine, SpecEngine)
    clock = Clock()  # requests come as the test says
    service = CompletionService(worker, options, clock=clock)
    service.model_ready()
    for uri, text in ((SECRET, SECRET_TEXT), (EXCLUDED, EXCLUDED_TEXT), (CODE, CODE_TEXT)):
        service.did_open(uri, "python", 1, text)
    for uri in (SECRET, EXCLUDED, CODE):
        clock.advance(5)  # a request after a pause
        await service.complete(uri, *end(service, uri), "utf-16")
    await drained(worker)
    docs = {key[0] for key in engine.copies.sources}
    assert CODE in docs
    assert SECRET not in docs and EXCLUDED not in docs
    assert holds(engine, CODE_TEXT)
    assert not holds(engine, SECRET_TEXT) and not holds(engine, EXCLUDED_TEXT)
    service.did_close(CODE)
    await drained(worker)
    assert CODE not in {key[0] for key in engine.copies.sources}
    worker.stop()
