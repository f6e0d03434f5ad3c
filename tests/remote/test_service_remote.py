"""The completion service on a remote llama-server (a fake one, in the real worker thread): other
files' chunks go as `input_extra` in a stable order, a failed prefetch leaves nothing cached, and
the engine's /metrics counters reach `spec-lsp/stats`."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from spec_lsp.completion import CompletionService
from spec_lsp.config import Options
from spec_lsp.remote import RemoteSpec, connect
from spec_lsp.worker import InferenceWorker, ModelInfo
from tests.fakes import PlainSyntax, end, until
from tests.remote.fake_engine import Clock, FakeEngine
from tests.remote.test_slots_metrics import LLAMA_PAGE

pytestmark = pytest.mark.timeout(60)

SHAPES = "file:///w/shapes.py"
NOTES = "file:///w/notes.py"
MAIN = "file:///w/main.py"
SHAPES_TEXT = (
    "class Rectangle:\n    def __init__(self, width, height):\n"
    "        self.width = width\n        self.height = height\n"
)
NOTES_TEXT = "# notes: every shape has an area_of_ function, in square metres\n"
MAIN_TEXT = "from shapes import Rectangle\n\nr = Rectangle(2, 3)\nprint("


@pytest.fixture
def fake() -> Iterator[FakeEngine]:
    engine = FakeEngine(["r.width", " * r.height"], delay_s=0.001)
    yield engine
    engine.stop()


async def service_on(
    fake: FakeEngine,
    fim: str = "qwen",
    prefetch: bool = False,
    clock: Clock | None = None,
    definitions: bool = True,
) -> CompletionService:
    """The service and its backend on one `clock` (a pause, the back-off: `clock.advance`)."""
    clock = clock or Clock()
    spec = RemoteSpec(kind="llama-server", url=fake.url, fim=fim, read_timeout_s=2.0)
    worker = InferenceWorker(asyncio.get_running_loop())
    info = ModelInfo(preset="remote", device="remote", fim=fim, context_tokens=2048)
    worker.backend, worker.state, worker.info = connect(spec, clock), "ready", info
    options = Options(max_tokens=32, prefetch=prefetch, definitions=definitions)
    service = CompletionService(worker, options, PlainSyntax(), clock=clock)
    service.model_ready()
    return service


async def keystroke(service: CompletionService, version: int, ch: str) -> str:
    row, col = end(service, MAIN)
    service.did_change(MAIN, version, [((row, col, row, col), ch)], "utf-16")
    suggestion = await service.complete(MAIN, row, col + 1, "utf-16")
    return "" if suggestion is None else suggestion.text


async def test_other_files_go_as_input_extra_in_a_stable_order(fake: FakeEngine) -> None:
    """The ring's chunks (the symbol index's definitions off: they go as chunks of their own,
    `tests/completion/test_repo_context.py`)."""
    clock = Clock()
    service = await service_on(fake, clock=clock, definitions=False)
    service.did_open(SHAPES, "python", 1, SHAPES_TEXT)
    service.did_open(MAIN, "python", 1, MAIN_TEXT)
    await service.complete(MAIN, *end(service, MAIN), "utf-16")  # the first request: a pause
    assert fake.paths[-1] == "/infill"
    first = fake.bodies[-1]
    assert first["input_extra"] == [{"filename": "shapes.py", "text": SHAPES_TEXT}]
    # The chunks are not in the prefix as well; the cursor's line goes after the middle marker.
    assert (first["input_prefix"], first["prompt"]) == (MAIN_TEXT[: -len("print(")], "print(")
    assert "<|file_sep|>" not in first["input_prefix"] + first["input_suffix"]
    service.did_open(NOTES, "python", 1, NOTES_TEXT)
    typed = ""
    for version, ch in enumerate("abc", start=2):  # typing: input_extra is byte-identical
        await keystroke(service, version, ch)
        typed += ch
        assert fake.bodies[-1]["input_extra"] == first["input_extra"]
        # The typed text goes after the middle marker (`prompt`): the prefix and suffix that
        # llama-server cached stay the same at each keystroke.
        assert fake.bodies[-1]["input_prefix"] + fake.bodies[-1]["prompt"] == MAIN_TEXT + typed
        assert fake.bodies[-1]["input_prefix"] == fake.bodies[-2]["input_prefix"]
    clock.advance(5)  # a pause of five seconds
    await keystroke(service, 5, "d")
    names = [chunk["filename"] for chunk in fake.bodies[-1]["input_extra"]]
    assert names == ["shapes.py", "notes.py"]  # the new one last: the older ones' prefix holds


async def test_a_prefix_only_preset_sends_the_prompt_whole_to_completion(fake: FakeEngine) -> None:
    service = await service_on(fake, fim="none")
    service.did_open(SHAPES, "python", 1, SHAPES_TEXT)
    service.did_open(MAIN, "python", 1, MAIN_TEXT)
    await service.complete(MAIN, *end(service, MAIN), "utf-16")
    assert fake.paths[-1] == "/completion"
    assert fake.bodies[-1]["prompt"].startswith("# shapes.py\nclass Rectangle:")


async def test_a_prefetch_the_engine_fails_is_neither_cached_nor_counted(fake: FakeEngine) -> None:
    clock = Clock()
    service = await service_on(fake, prefetch=True, clock=clock)
    service.did_open(MAIN, "python", 1, MAIN_TEXT)
    first = await service.complete(MAIN, *end(service, MAIN), "utf-16")
    assert first is not None and first.text == "r.width * r.height"
    fake.mode = "5xx"  # before the prefetch (scheduled, not yet run) reaches the engine
    await until(lambda: not service.prefetch.busy(MAIN) and len(fake.bodies) == 2, "prefetched")
    assert service.stats.prefetched == 0
    fake.mode = "ok"
    clock.advance(5)  # a pause, past the back-off after one failure (0.5 s)
    after = await keystroke(service, 2, first.text)  # the accept
    assert after == "r.width * r.height"  # asked again, not the failed prefetch's empty answer
    assert len(fake.bodies) == 3 and service.stats.prefetch_hits == 0


async def test_the_engines_metrics_counters_reach_the_stats(fake: FakeEngine) -> None:
    fake.metrics = LLAMA_PAGE
    service = await service_on(fake)
    assert "engineMetrics" not in service.stats_wire({})
    service.did_open(MAIN, "python", 1, MAIN_TEXT)
    await service.complete(MAIN, *end(service, MAIN), "utf-16")
    await until(lambda: "engineMetrics" in service.stats_wire({}), "the metrics were read")
    wire = service.stats_wire({})
    assert wire["engineMetrics"] == {
        "source": "llamacpp",
        "draftTokens": 64,
        "acceptedTokens": 16,
        "drafts": 20,
        "acceptance": 0.25,
    }
    assert wire["proposedTokens"] == 6  # this editor's own requests' draft_n, beside them


async def test_a_refused_request_counts_as_a_failure_not_as_decode_latency(
    fake: FakeEngine,
) -> None:
    service = await service_on(fake)
    fake.stop()  # nothing listens on the port: each request is refused at once
    service.did_open(MAIN, "python", 1, MAIN_TEXT)
    assert await service.complete(MAIN, *end(service, MAIN), "utf-16") is None
    await until(lambda: service.stats.failed == 1, "the failure was counted")
    wire = service.stats_wire({})
    assert (wire["failed"], wire["generated"]) == (1, 0)
    latency = wire["latencyMs"]
    assert latency["decode"]["n"] == latency["prefill"]["n"] == latency["queue"]["n"] == 0
    assert service.stats.model_ms_ema is None  # a failure does not stretch the debounce either


async def test_a_keystroke_during_the_prompts_evaluation_leaves_a_warm_up(
    fake: FakeEngine,
) -> None:
    fake.prefill_s = 1.0  # the engine is still evaluating the prompt when the keystroke comes
    service = await service_on(fake, fim="none")
    service.did_open(MAIN, "python", 1, MAIN_TEXT)
    first = asyncio.ensure_future(service.complete(MAIN, *end(service, MAIN), "utf-16"))
    await until(lambda: bool(fake.bodies), "the engine has the first request")
    fake.prefill_s = 0.0
    after = await keystroke(service, 2, "r")  # supersedes the first; its own request runs at once
    assert await first is None and after == "r.width * r.height"
    await until(lambda: service.stats_wire({})["remoteWarmups"]["done"] == 1, "warmed up")
    warmups = service.stats_wire({})["remoteWarmups"]
    assert (warmups["done"], warmups["failed"]) == (1, 0)
    assert fake.warm_bodies[0]["prompt"] == fake.bodies[0]["prompt"]  # the superseded prompt
    assert fake.warm_bodies[0]["n_predict"] == 0
