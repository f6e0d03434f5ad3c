"""What the server keeps per document is bounded: parsed trees for recently used documents only,
and free heap memory handed back to the OS after large prefills and closed documents."""

from __future__ import annotations

import asyncio

from spec_lsp.completion import CompletionService
from spec_lsp.completion.syntax_port import SyntaxPort as Syntax
from spec_lsp.config import Options
from spec_lsp.heap import release_free_memory
from spec_lsp.worker import TRIM_AFTER_PREFILL, InferenceWorker, ModelInfo
from tests.fakes import WAIT_S, PrefillBackend, until

SOURCE = "def area(r):\n    if r < 0:\n        raise ValueError(r)\n    return "
COMPLETION = "3.14 * r * r\n\n\ndef other():\n    pass\n"


def _open(syntax: Syntax, texts: dict[str, str]) -> None:
    for uri, text in texts.items():
        syntax.open(uri, "python", text)


def test_only_the_most_recently_used_documents_stay_parsed() -> None:
    texts = {f"file:///m{i}.py": SOURCE for i in range(5)}
    syntax = Syntax(resident=2)
    syntax.source = lambda uri: ("python", texts[uri]) if uri in texts else None
    _open(syntax, texts)
    assert [syntax.is_parsed(u) for u in texts] == [False, False, False, True, True]
    syntax.context("file:///m0.py", 3, 11)  # asked about again: parsed again
    assert syntax.is_parsed("file:///m0.py") and not syntax.is_parsed("file:///m3.py")


def test_a_document_parsed_again_answers_like_one_that_stayed_parsed() -> None:
    texts = {f"file:///a{i}.py": SOURCE for i in range(4)}
    bounded, unbounded = Syntax(resident=1), Syntax()
    bounded.source = lambda uri: ("python", texts[uri])
    _open(bounded, texts)
    _open(unbounded, texts)
    # an edit while the document is not parsed reaches it through `source`
    edit = ((3, 11), (3, 11), "math.pi * r ** 2  # ")
    texts["file:///a0.py"] = SOURCE + edit[2]
    for syntax in (bounded, unbounded):
        syntax.apply_edit("file:///a0.py", *edit)
    row, col = 3, 11 + len(edit[2])
    for uri in texts:
        r, c = (row, col) if uri == "file:///a0.py" else (3, 11)
        got, want = bounded.cutter(uri, r, c, "", ""), unbounded.cutter(uri, r, c, "", "")
        assert got.mode == want.mode
        assert bounded.context(uri, r, c) == unbounded.context(uri, r, c)
        assert got.trim(COMPLETION) == want.trim(COMPLETION)


def test_without_a_source_every_open_document_stays_parsed() -> None:
    syntax = Syntax(resident=1)
    _open(syntax, {f"file:///s{i}.py": SOURCE for i in range(3)})
    assert all(syntax.is_parsed(f"file:///s{i}.py") for i in range(3))


def test_free_heap_memory_can_be_handed_back_on_this_platform() -> None:
    assert release_free_memory()  # Linux with glibc, where the server runs


async def _service(prefilled: int) -> CompletionService:
    worker = InferenceWorker(asyncio.get_running_loop())
    worker.backend, worker.state = PrefillBackend(prefilled), "ready"
    worker.info = ModelInfo(preset="fake")
    service = CompletionService(worker, Options(max_tokens=8, prefetch=False))  # calls counted
    service.model_ready()
    return service


async def _trimmed(worker: InferenceWorker) -> None:
    """Waits (bounded) until the worker has trimmed the heap once."""
    await until(lambda: worker.trims >= 1, "the worker trimmed the heap")


async def _ended(worker: InferenceWorker) -> None:
    """Stops the worker once its queued jobs have run, and waits for its thread to end: every
    trim it would run (after a job, when its queue is empty) has run."""
    done = asyncio.get_running_loop().create_future()
    worker.call(lambda _: done.get_loop().call_soon_threadsafe(done.set_result, None))
    await asyncio.wait_for(done, WAIT_S)
    worker.stop()
    await asyncio.to_thread(worker.join, WAIT_S)


async def test_the_worker_trims_the_heap_after_a_large_prefill_but_not_while_typing() -> None:
    typing = await _service(prefilled=2)
    typing.did_open("file:///t.py", "python", 1, "x = ")
    await typing.complete("file:///t.py", 0, 4, "utf-16")
    await _ended(typing.worker)
    assert typing.worker.trims == 0
    opened = await _service(prefilled=TRIM_AFTER_PREFILL)
    opened.did_open("file:///o.py", "python", 1, "x = ")
    await opened.complete("file:///o.py", 0, 4, "utf-16")
    await _trimmed(opened.worker)
    await _ended(opened.worker)
    assert opened.worker.trims == 1


async def test_closing_a_document_trims_the_heap_once_the_worker_is_idle() -> None:
    service = await _service(prefilled=2)
    for i in range(3):
        service.did_open(f"file:///c{i}.py", "python", 1, "x = ")
    for i in range(3):
        service.did_close(f"file:///c{i}.py")
    await _trimmed(service.worker)
    await _ended(service.worker)
    assert 1 <= service.worker.trims <= 3
    assert not service.syntax.is_parsed("file:///c0.py") and len(service.docs) == 0
