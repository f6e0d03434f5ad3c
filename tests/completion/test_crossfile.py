"""Context from other files: chunks of other documents ahead of the current file in the prompt,
changed only after a pause, so the prompt's start (and the KV) holds from keystroke to keystroke."""

from __future__ import annotations

import asyncio

from spec_lsp.completion import CompletionService
from spec_lsp.completion.neighbours import Neighbours, render
from spec_lsp.config import Options
from spec_lsp.worker import InferenceWorker, engine_loader
from tests.fakes import RecordingBackend, ScriptedBackend, end, service_with
from tests.remote.fake_engine import Clock

DEFS = "file:///w/shapes.py"
USE = "file:///w/main.py"
NOTES = "file:///w/notes.py"
DEFS_TEXT = (
    "class Rectangle:\n    def __init__(self, width, height):\n"
    "        self.width = width\n        self.height = height\n\n"
    "def area_of_rectangle(rect):\n    return rect.width * rect.height\n"
)
USE_TEXT = "from shapes import Rectangle\n\nr = Rectangle(2, 3)\nprint("


async def keystroke(service: CompletionService, version: int, ch: str) -> None:
    row, col = end(service, USE)
    service.did_change(USE, version, [((row, col, row, col), ch)], "utf-16")
    await service.complete(USE, row, col + 1, "utf-16")


async def test_other_files_come_first_and_change_only_after_a_pause() -> None:
    backend = ScriptedBackend("x")
    backend.free_running = True
    clock = Clock()  # requests come as the test says: no time passes while it types
    service = await service_with(backend, clock=clock)
    service.did_open(DEFS, "python", 1, DEFS_TEXT)
    service.did_open(USE, "python", 1, USE_TEXT)
    await service.complete(USE, *end(service, USE), "utf-16")  # the first request: a pause
    first = backend.calls[-1].prompt
    assert first.startswith("# shapes.py\nclass Rectangle:") and "# main.py\nfrom shapes" in first
    assert "# main.py\nfrom shapes" not in first.split("# main.py")[0]  # not its own chunk
    service.did_open(NOTES, "python", 1, "# notes: every shape has an area_of_ function\n")
    for version, ch in enumerate("area", start=2):  # typing: the chunks stay as they were
        await keystroke(service, version, ch)
        assert backend.calls[-1].prompt.startswith(first.split("# main.py")[0] + "# main.py")
        assert "notes" not in backend.calls[-1].prompt
    clock.advance(5)  # a pause of five seconds
    await keystroke(service, 6, "_")
    assert "# notes.py\n# notes:" in backend.calls[-1].prompt


async def test_cross_file_off_leaves_the_in_file_prompt_alone() -> None:
    """`crossFile` false: no other file's chunk, the prompt is the one file's (and turning it on
    again brings the ring back). Definitions and edits are off here: they are `repo.py`'s."""
    backend = ScriptedBackend("x")
    backend.free_running = True
    alone = await service_with(ScriptedBackend("x"))
    alone.did_open(USE, "python", 1, USE_TEXT)
    await alone.complete(USE, *end(alone, USE), "utf-16")
    service = await service_with(backend, cross_file=False, definitions=False)
    service.did_open(DEFS, "python", 1, DEFS_TEXT)
    service.did_open(USE, "python", 1, USE_TEXT)
    await service.complete(USE, *end(service, USE), "utf-16")
    assert backend.calls[-1].prompt == alone.worker.backend.calls[-1].prompt  # type: ignore[union-attr]
    service.set_options(Options(max_tokens=32, prefetch=False, definitions=False))
    await keystroke(service, 2, "a")  # not the suggestion typed through: the model runs
    assert backend.calls[-1].prompt.startswith("# shapes.py\nclass Rectangle:")


async def test_two_files_on_the_tiny_model_prefill_under_8_tokens_per_keystroke() -> None:
    worker = InferenceWorker(asyncio.get_running_loop())
    loaded = asyncio.Event()
    options = Options(preset="tiny", device="cpu", max_tokens=8, prefetch=False)
    worker.load("tiny", engine_loader(options), lambda m, f: None, loaded.set)
    await asyncio.wait_for(loaded.wait(), 300)
    assert worker.state == "ready" and worker.backend is not None
    recording = RecordingBackend(worker.backend)
    worker.backend = recording
    service = CompletionService(worker, options)
    service.model_ready()
    service.did_open(DEFS, "python", 1, DEFS_TEXT)
    service.did_open(USE, "python", 1, USE_TEXT)
    await service.complete(USE, *end(service, USE), "utf-16")
    assert "class Rectangle" in recording.requests[0][0].prompt
    started = len(recording.requests)
    for version, ch in enumerate("area_of", start=2):
        await keystroke(service, version, ch)
    typed = recording.requests[started:]
    assert any(not result.cancelled for _, result in typed), "the keystrokes ran the model"
    for request, result in typed:
        assert "class Rectangle" in request.prompt
        if not result.cancelled:
            assert result.stats.prefilled_tokens < 8, result.stats
    worker.stop()


def test_the_ring_keeps_16_chunks_in_order_and_the_current_documents_note_waits() -> None:
    ring = Neighbours()
    for i in range(20):
        ring.note(f"file:///w/m{i}.py", [f"def f{i}(): return {i} + {i} + {i}  # padding"], 0)
    assert ring.settle(keep="file:///w/m19.py")
    names = [name for name, _ in ring.chunks("")]
    assert names == [f"m{i}.py" for i in range(3, 19)]  # the oldest dropped, m19 still pending
    assert ring.settle() and [n for n, _ in ring.chunks("")][-1] == "m19.py"
    text = render("qwen", "python", ring.chunks("file:///w/m4.py"), "file:///w/m4.py", 400)
    assert text.startswith("<|repo_name|>workspace\n<|file_sep|>") and len(text) <= 400
    assert text.endswith("<|file_sep|>m4.py\n") and "m18.py" in text and "m4.py\ndef" not in text
