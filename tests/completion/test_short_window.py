"""A cold file's requests carry a short window, and an answer over it fills the full one on idle.

The plan holds the same prompt over a short window (`Options.short_window` tokens, no other files);
the engine answers over it while the document's full window has no KV (`engine/cold.py`), and
says so (`GenerationStats.short_window`). The service then prefills the full window of that
cursor on idle time, as a resting cursor's warm-up, so the requests after it take the full one.
"""

from __future__ import annotations

from spec_lsp.engine.api import GenerationRequest, GenerationResult, GenerationStats
from tests.completion.test_prefetch import WarmBackend, drain
from tests.fakes import URI, ScriptedBackend, service_with, until

LINES = [f"value_{i} = compute({i}, scale=2)" for i in range(600)]  # ~20,000 characters
TEXT = "\n".join(LINES) + "\n"
ROW = 500


class ColdBackend(WarmBackend):
    """Says every request that carries a short prompt was answered over it (`cold`)."""

    def __init__(self, text: str, cold: bool = True) -> None:
        super().__init__(text)
        self.cold = cold
        self.free_running = True

    def generate(self, request: GenerationRequest) -> GenerationResult:
        result = super().generate(request)
        if request.short_prompt is not None and self.cold and not request.idle:
            stats = GenerationStats(short_window=True, stop_reason=result.stats.stop_reason)
            return GenerationResult(result.text, result.token_ids, stats)
        return result


async def test_a_request_carries_the_same_prompt_over_a_short_window() -> None:
    backend = ColdBackend("x", cold=False)
    service = await service_with(backend, short_window=64)
    service.did_open(URI, "python", 1, TEXT)
    answer = await service.complete(URI, ROW, 3, "utf-16")
    assert answer is not None and answer.text == "x"
    request = backend.calls[0]
    assert request.short_prompt is not None
    assert len(request.short_prompt) < len(request.prompt) // 4
    assert request.short_prompt.endswith(LINES[ROW][:3]) and request.prompt.endswith(LINES[ROW][:3])
    off = ColdBackend("x", cold=False)
    plain = await service_with(off, short_window=0)
    plain.did_open(URI, "python", 1, TEXT)
    await plain.complete(URI, ROW, 3, "utf-16")
    assert off.calls[0].short_prompt is None  # 0: no short window
    plain.stats.note_prefill(GenerationStats(prefilled_tokens=64, prefill_ms=800.0))
    plain.did_change(URI, 2, [((ROW, 3, ROW, 3), "u")], "utf-16")
    await plain.complete(URI, ROW, 4, "utf-16")
    assert off.calls[1].short_prompt is None  # whatever the rate


async def test_an_answer_over_a_short_window_fills_the_full_one_on_idle_time() -> None:
    backend = ColdBackend("x")
    service = await service_with(backend, prefetch=True, short_window=64)
    service.did_open(URI, "python", 1, TEXT)
    await until(lambda: len(backend.warmups) == 1, "the head's warm-up started")
    answer = await service.complete(URI, ROW, 3, "utf-16")
    assert answer is not None and answer.text == "x"
    window = backend.calls[0].prompt[:-4]  # the request's full window, but the cursor's word

    def filled() -> bool:  # a warm-up of that window (not the head's), at or after the cursor
        return any(w.prompt.startswith(window) for w in backend.warmups[1:])

    await until(filled, "the full window's warm-up started")
    assert service.stats.to_wire({})["shortWindow"] == 1
    await drain(service)


async def test_an_answer_over_the_full_window_starts_no_fill() -> None:
    backend = ColdBackend("x", cold=False)
    service = await service_with(backend, prefetch=True, short_window=64)
    service.did_open(URI, "python", 1, TEXT)
    await until(lambda: len(backend.warmups) == 1, "the head's warm-up started")
    await service.complete(URI, ROW, 3, "utf-16")
    await drain(service)
    assert len(backend.warmups) == 1 and service.stats.to_wire({})["shortWindow"] == 0


async def test_the_short_window_is_what_the_engine_prefills_in_a_second_and_a_half() -> None:
    """128 tokens until a prefill rate is measured, then what ~1.5 s prefills (the option at
    most); a larger size leaves the windows there as they are, a smaller one moves them."""
    backend = ColdBackend("x", cold=False)
    service = await service_with(backend, short_window=512)
    service.did_open(URI, "python", 1, TEXT)
    await service.complete(URI, ROW, 3, "utf-16")
    assert service.planner.short_tokens == 128  # no prefill measured yet
    for _ in range(20):  # passes of 64 tokens at 300 a second
        service.stats.note_prefill(GenerationStats(prefilled_tokens=64, prefill_ms=213.3))
    assert service.stats.prefill_rate is not None and abs(service.stats.prefill_rate - 300) < 1
    service.did_change(URI, 2, [((ROW, 3, ROW, 3), "u")], "utf-16")
    await service.complete(URI, ROW, 4, "utf-16")
    assert service.planner.short_tokens == 450  # 300 tokens/s x 1.5 s
    await service.complete(URI, ROW - 300, 4, "utf-16")  # a jump: a window of the new size
    sizes = [len(call.short_prompt or "") for call in backend.calls]
    assert sizes[1] == sizes[0] + 1  # the same window, one character typed
    assert sizes[2] > sizes[0] * 2.5
    for _ in range(20):  # 80 a second: smaller windows, the ones there move
        service.stats.note_prefill(GenerationStats(prefilled_tokens=64, prefill_ms=800.0))
    await service.complete(URI, ROW - 200, 4, "utf-16")
    assert service.planner.short_tokens == 120
    assert len(backend.calls[3].short_prompt or "") < sizes[2] * 0.4
    service.stats.note_prefill(GenerationStats(prefilled_tokens=8, prefill_ms=800.0))
    assert abs(service.stats.prefill_rate - 80) < 1  # passes under 16 tokens say nothing


async def test_a_backend_that_keeps_no_kv_per_document_gets_no_short_window() -> None:
    backend = ScriptedBackend("x")  # no warm-up capability: a remote engine's kind
    backend.free_running = True
    service = await service_with(backend, short_window=64)
    service.did_open(URI, "python", 1, TEXT)
    await service.complete(URI, ROW, 3, "utf-16")
    assert backend.calls[0].short_prompt is None and service.planner.short is None


async def test_a_short_window_stays_where_it_started_while_lines_are_typed_below() -> None:
    """Each new line would move a window kept within its own few dozen tokens (its KV
    re-prefilled whole): it keeps its start as it grows, so its KV is reused."""
    backend = ColdBackend("x")
    service = await service_with(backend, short_window=64)
    service.did_open(URI, "python", 1, TEXT)
    version, row = 1, ROW + 1
    for n in range(8):
        version += 1
        line = f"item_{n} = compute({n}, scale=3)"
        service.did_change(URI, version, [((row, 0, row, 0), line + "\n")], "utf-16")
        await service.complete(URI, row, len(line), "utf-16")
        row += 1
    shorts = [call.short_prompt for call in backend.calls if not call.idle]
    assert len(shorts) == 8 and all(s is not None for s in shorts)
    heads = {s.split("\n", 1)[0] for s in shorts if s is not None}
    assert len(heads) == 1, heads  # one start line
    assert shorts[-1] is not None and shorts[-1].startswith(shorts[0][: len(shorts[0]) // 2])


async def test_a_setting_over_the_models_window_waits_for_a_measured_rate() -> None:
    """`shortWindow` larger than the model's window allows: none until a prefill rate is
    measured, then what ~1.5 s prefills (not the setting's size)."""
    backend = ColdBackend("x", cold=False)
    service = await service_with(backend, short_window=4096)
    service.did_open(URI, "python", 1, TEXT)
    await service.complete(URI, ROW, 3, "utf-16")
    assert backend.calls[0].short_prompt is None and service.planner.short_tokens == 0
    for _ in range(20):
        service.stats.note_prefill(GenerationStats(prefilled_tokens=64, prefill_ms=400.0))
    service.did_change(URI, 2, [((ROW, 3, ROW, 3), "u")], "utf-16")
    await service.complete(URI, ROW, 4, "utf-16")
    assert service.planner.short_tokens == 240  # 160 tokens/s x 1.5 s
    assert backend.calls[1].short_prompt is not None
