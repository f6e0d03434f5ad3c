"""A request whose prompt ends in typed code cut inside a token asks the engine to heal it
(`GenerationRequest.heal`, `engine/healing.py`); one whose prompt ends in a lead left out, a
blank or nothing typed does not."""

from __future__ import annotations

from tests.fakes import URI, ScriptedBackend, service_with

TEXT = "import math\n\n\ndef area(r):\n    return math.\n\n\nvalue = area(2) + \n"


async def heal_at(line: int, character: int) -> bool:
    backend = ScriptedBackend("x")
    backend.free_running = True
    service = await service_with(backend)
    service.did_open(URI, "python", 1, TEXT)
    await service.complete(URI, line, character, "utf-16")
    assert backend.calls, "no generation"
    return backend.calls[-1].heal


async def test_a_prompt_ending_in_a_sign_or_a_part_of_a_word_is_healed() -> None:
    assert await heal_at(4, 16)  # `    return math.`
    assert await heal_at(4, 14)  # `    return mat`


async def test_a_prompt_ending_in_a_lead_or_at_a_line_start_is_not() -> None:
    assert not await heal_at(7, 18)  # `value = area(2) + `: the typed space is the lead
    assert not await heal_at(1, 0)  # an empty line
    assert not await heal_at(4, 4)  # indentation only: its last blank is the lead
