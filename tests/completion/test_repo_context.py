"""Repository context in completion prompts: a definition from another file of the workspace
reaches the prompt, stays byte-identical while typing, never comes from a private file, and other
documents' recent edits come with it; each kind can be turned off."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from spec_lsp.completion import CompletionService
from spec_lsp.config import Options
from tests.fakes import ScriptedBackend, end, service_with
from tests.remote.fake_engine import Clock

SHAPES = 'class Rectangle:\n    """An axis-aligned rectangle."""\n'
SHAPES += "    def scaled(self, k):\n        pass\n"
SECRET = "def api_token_for(user):\n    return 'hunter2'\n"
MAIN = "from shapes import Rectangle\nfrom credentials import api_token_for\n\nr = Rectangle("


async def served(
    tmp_path: Path, clock: Callable[[], float] = time.perf_counter, **options: bool
) -> tuple[CompletionService, ScriptedBackend]:
    (tmp_path / "shapes.py").write_text(SHAPES)
    (tmp_path / "credentials.py").write_text(SECRET)  # private by the built-in list
    (tmp_path / "main.py").write_text(MAIN)
    backend = ScriptedBackend("x")
    backend.free_running = True
    service = await service_with(backend, clock=clock, **options)
    repo = service.planner.repo
    repo.index.roots = (str(tmp_path),)
    repo.index.build(repo.index.roots)  # what `workspace` starts in the background
    return service, backend


async def test_a_definition_from_another_file_reaches_the_prompt_and_holds_while_typing(
    tmp_path: Path,
) -> None:
    service, backend = await served(tmp_path)
    uri = (tmp_path / "main.py").as_uri()
    service.did_open(uri, "python", 1, MAIN)
    await service.complete(uri, *end(service, uri), "utf-16")
    first = backend.calls[-1].prompt
    assert '# shapes.py\nclass Rectangle:\n    """An axis-aligned rectangle."""' in first
    assert "def scaled(self, k): ..." in first
    head = first.split("# main.py")[0]
    for version, ch in enumerate("2, ", start=2):  # typing: the context stays byte for byte
        row, col = end(service, uri)
        service.did_change(uri, version, [((row, col, row, col), ch)], "utf-16")
        await service.complete(uri, row, col + 1, "utf-16")
        assert backend.calls[-1].prompt.startswith(head + "# main.py\n")


async def test_a_private_files_definitions_never_reach_a_prompt(tmp_path: Path) -> None:
    service, backend = await served(tmp_path)
    uri = (tmp_path / "main.py").as_uri()
    text = MAIN + "\ntoken = api_token_for("
    service.did_open(uri, "python", 1, text)
    await service.complete(uri, *end(service, uri), "utf-16")
    prompt = backend.calls[-1].prompt
    assert "hunter2" not in prompt and "credentials.py" not in prompt
    assert not service.planner.repo.index.has(str(tmp_path / "credentials.py"))


async def test_definitions_off_leaves_the_in_file_prompt_alone(tmp_path: Path) -> None:
    service, backend = await served(tmp_path, definitions=False)
    alone = await service_with(ScriptedBackend("x"))
    uri = (tmp_path / "main.py").as_uri()
    for s in (service, alone):
        s.did_open(uri, "python", 1, MAIN)
        await s.complete(uri, *end(s, uri), "utf-16")
    assert backend.calls[-1].prompt == alone.worker.backend.calls[-1].prompt  # type: ignore[union-attr]


async def test_another_documents_edits_come_after_a_pause_unless_edit_context_is_off(
    tmp_path: Path,
) -> None:
    for edit_context in (True, False):
        service, backend = await served(tmp_path, edit_context=edit_context)
        other, uri = (tmp_path / "shapes.py").as_uri(), (tmp_path / "main.py").as_uri()
        service.did_open(other, "python", 1, SHAPES)
        service.did_change(other, 2, [((2, 8, 2, 14), "resized")], "utf-16")
        service.did_open(uri, "python", 1, MAIN)
        await service.complete(uri, *end(service, uri), "utf-16")
        prompt = backend.calls[-1].prompt
        diff = "# shapes.py.diff\n--- a/shapes.py\n+++ b/shapes.py\n@@ -3,1 +3,1 @@\n"
        assert (
            diff + "-    def scaled(self, k):\n+    def resized(self, k):" in prompt
        ) is edit_context
        service.set_options(Options(max_tokens=32, prefetch=False))


async def test_a_pause_changes_the_definitions_only_for_a_call_not_yet_shown(
    tmp_path: Path,
) -> None:
    """A pause may change the context, and a change re-prefills all after it: the definitions
    change only when the call being written wants one that is not shown."""
    (tmp_path / "colors.py").write_text("def blend(a, b):\n    'Mixes two colors.'\n")
    clock = Clock()
    service, backend = await served(tmp_path, clock=clock)
    uri = (tmp_path / "main.py").as_uri()
    # `colors.blend` is only used until the call: `colors` imported as a module, its member
    # resolves through it.
    text = "from shapes import Rectangle\nimport colors\n\nr = Rectangle(2, 3)\n"
    service.did_open(uri, "python", 1, text)
    heads = []
    for version, typed in enumerate(["x = r.", "\ny = 1 + colors.blend", "(", "\nz = r.", "\n"], 2):
        clock.advance(5)  # a pause before each: other files' context may change
        row, col = end(service, uri)
        service.did_change(uri, version, [((row, col, row, col), typed)], "utf-16")
        await service.complete(uri, *end(service, uri), "utf-16")
        heads.append(backend.calls[-1].prompt.split("# main.py")[0])
    assert "class Rectangle:" in heads[0] and "def blend" not in heads[0]
    assert heads[1] == heads[0]  # `blend` is only used: the context holds
    assert 'def blend(a, b):\n    """Mixes two colors."""' in heads[2]  # being called
    assert heads[2].index("class Rectangle") < heads[2].index("def blend")  # added after
    assert heads[4] == heads[3] == heads[2]  # all the cursor wants is shown


async def test_one_file_without_a_folder_gets_the_prompt_of_before() -> None:
    """HumanEval's case: one file, no workspace folder; the defaults' prompt is the one with all
    three kinds of other files' context off, byte for byte."""
    text = 'from typing import List\n\n\ndef total(xs: List[int]) -> int:\n    """Sum."""\n    '
    prompts = []
    for options in ({}, {"cross_file": False, "definitions": False, "edit_context": False}):
        backend = ScriptedBackend("x")
        backend.free_running = True
        service = await service_with(backend, **options)
        uri = "file:///humaneval/HumanEval_0.py"
        service.did_open(uri, "python", 1, text)
        await service.complete(uri, *end(service, uri), "utf-16")
        prompts.append(backend.calls[-1].prompt)
    assert prompts[0] == prompts[1]
    assert prompts[0].startswith("from typing import List")


async def test_a_save_keeps_the_buffer_and_a_close_reads_the_disk_again(tmp_path: Path) -> None:
    service, _ = await served(tmp_path)
    repo, shapes = service.planner.repo, tmp_path / "shapes.py"
    uri = shapes.as_uri()
    service.did_open(uri, "python", 1, "def unsaved_helper():\n    pass\n")
    service.planner.repo.saved_or_closed(uri)  # didSave: the buffer is still what counts
    repo.refresh(uri, [""], 0, 0, 1000)
    assert repo.index.defining("unsaved_helper") == [str(shapes)]
    service.did_close(uri)  # closed without saving: the file on disk again
    assert repo.index.defining("unsaved_helper") == []
    assert repo.index.defining("Rectangle") == [str(shapes)]


def test_a_tight_budget_keeps_the_call_being_written_and_trims_a_large_class(
    tmp_path: Path,
) -> None:
    """Where not all the definitions fit, the least wanted go (the call being written stays, a
    name merely used above it goes), and a class larger than the room left shows its header and
    as many members as fit rather than nothing."""
    from spec_lsp.completion.repo import RepoContext

    fields = "".join(f"    field_{i}: int\n" for i in range(12))
    (tmp_path / "big.py").write_text(f'class Big:\n    """A large record."""\n{fields}')
    helpers = "".join(f"def helper_{i}(value, other):\n    'Helps {i}.'\n" for i in range(6))
    (tmp_path / "helpers.py").write_text(helpers)
    names = ", ".join(f"helper_{i}" for i in range(6))
    main = f"from helpers import {names}\nfrom big import Big\n\nhelper_5(1, 2)\nb = Big("
    (tmp_path / "main.py").write_text(main)
    repo = RepoContext()
    repo.configure(Options(definitions=True, edit_context=False))
    repo.index.roots = (str(tmp_path),)
    repo.index.build(repo.index.roots)
    uri = (tmp_path / "main.py").as_uri()
    lines = main.split("\n")
    repo.refresh(uri, lines, len(lines) - 1, len(lines[-1]), 300)
    shown = "".join(text for _name, text in repo.chunks(uri))
    assert shown.startswith('class Big:\n    """A large record."""\n    field_0: int\n')
    assert "field_11" not in shown and len(shown) <= 200  # two thirds of 300, names included
    repo.refresh(uri, lines, len(lines) - 1, len(lines[-1]), 3000)  # room for all: unchanged
    assert "".join(text for _name, text in repo.chunks(uri)) == shown  # the call's is shown
    repo._frozen.clear()  # a first pause again, with room for all
    repo.refresh(uri, lines, len(lines) - 1, len(lines[-1]), 3000)
    everything = "".join(text for _name, text in repo.chunks(uri))
    assert "field_11: int" in everything and "def helper_5(value, other)" in everything
    assert "helper_5" not in shown
