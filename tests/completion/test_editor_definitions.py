"""Definitions the editor's other language servers sent (`spec-lsp/definitions`): they reach the
prompt as the index's do, bounded, never a private file's nor for a private document, a late
answer about an older version is dropped, and `definitions` off shows none."""

from __future__ import annotations

from spec_lsp.completion.editor_definitions import (
    MAX_DOCUMENTS,
    MAX_SENT,
    MAX_TEXT_CHARS,
    MAX_TEXT_LINES,
    EditorDefinitions,
    Sent,
    clean_text,
)
from spec_lsp.config import Options
from tests.fakes import ScriptedBackend, end, service_with
from tests.remote.fake_engine import Clock

MAIN = "import numpy as np\n\nvalues = np.linspace("
URI = "file:///work/app/main.py"
LIB = "file:///usr/lib/python3/site-packages/numpy/core/function_base.py"
HOVER = (
    "```python\n(function) def linspace(start: float, stop: float, num: int = 50) -> ndarray\n"
    "```\n---\nReturn evenly spaced numbers over a specified interval."
)


def linspace(uri: str = LIB, text: str = HOVER) -> Sent:
    return Sent("linspace", uri, 20, text)


async def test_a_definition_the_editor_sent_reaches_the_prompt_after_a_pause() -> None:
    clock = Clock()
    backend = ScriptedBackend("x")
    backend.free_running = True
    service = await service_with(backend, clock=clock)
    service.did_open(URI, "python", 1, MAIN)
    assert service.planner.editor_definitions(URI, 1, [linspace()]) == 1
    await service.complete(URI, *end(service, URI), "utf-16")
    prompt = backend.calls[-1].prompt
    shown = "(function) def linspace(start: float, stop: float, num: int = 50) -> ndarray\n"
    shown += "Return evenly spaced numbers over a specified interval."
    assert f"# function_base.py\n{shown}" in prompt
    assert "```" not in prompt and "---" not in prompt
    head = prompt.split("# main.py")[0]
    for version, ch in enumerate("0, 1", start=2):  # typing: the context stays byte for byte
        row, col = end(service, URI)
        service.did_change(URI, version, [((row, col, row, col), ch)], "utf-16")
        await service.complete(URI, row, col + 1, "utf-16")
        assert backend.calls[-1].prompt.startswith(head + "# main.py\n")


async def test_definitions_sent_after_a_pause_reach_the_next_request_without_another() -> None:
    """The plugins send them at a pause, after the server's own refresh there: the next request
    refreshes the context once more, with no second pause (the clock never moves)."""
    clock = Clock()
    backend = ScriptedBackend("x")
    backend.free_running = True
    service = await service_with(backend, clock=clock)
    service.did_open(URI, "python", 1, MAIN)
    await service.complete(URI, *end(service, URI), "utf-16")
    assert "def linspace(start" not in backend.calls[-1].prompt
    assert service.planner.editor_definitions(URI, 1, [linspace()]) == 1
    row, col = end(service, URI)
    service.did_change(URI, 2, [((row, col, row, col), "0")], "utf-16")
    await service.complete(URI, row, col + 1, "utf-16")
    assert "(function) def linspace(start" in backend.calls[-1].prompt


async def test_definitions_off_shows_nothing_the_editor_sent() -> None:
    backend = ScriptedBackend("x")
    backend.free_running = True
    service = await service_with(backend, definitions=False)
    service.did_open(URI, "python", 1, MAIN)
    assert service.planner.editor_definitions(URI, 1, [linspace()]) == 0
    await service.complete(URI, *end(service, URI), "utf-16")
    assert "linspace(start" not in backend.calls[-1].prompt


def test_a_private_files_definition_is_never_kept_nor_one_for_a_private_document() -> None:
    store = EditorDefinitions()
    options = Options(private_files=("*/vault/*",))
    secret = linspace("file:///work/app/.env", "API_KEY = 'hunter2'")
    vault = linspace("file:///work/vault/keys.py", "def linspace(): 'hunter2'")
    assert store.receive(URI, 1, [secret, vault], options) == 0
    assert store.receive("file:///work/app/credentials.py", 1, [linspace()], options) == 0
    lines = MAIN.split("\n")
    assert store.near("file:///work/app/credentials.py", lines, 2, len(lines[2]), options) == []


def test_a_file_made_private_after_it_was_sent_is_not_shown() -> None:
    store = EditorDefinitions()
    lines = MAIN.split("\n")
    assert store.receive(URI, 1, [linspace()], Options()) == 1
    assert [d.tag.name for d in store.near(URI, lines, 2, len(lines[2]), Options())] == ["linspace"]
    later = Options(private_files=("*/site-packages/*",))
    assert store.near(URI, lines, 2, len(lines[2]), later) == []


def test_only_names_near_the_cursor_are_shown_the_call_being_written_primary() -> None:
    store = EditorDefinitions()
    far = Sent("unrelated", LIB, 3, "def unrelated() -> None")
    own = Sent("values", URI, 2, "values: ndarray")  # the document's own: in its text already
    store.receive(URI, 1, [far, own, linspace()], Options())
    lines = MAIN.split("\n")
    found = store.near(URI, lines, 2, len(lines[2]), Options())
    assert [(d.tag.name, d.primary, d.tag.line) for d in found] == [("linspace", True, 20)]


def test_a_late_answer_about_an_older_version_is_dropped() -> None:
    store = EditorDefinitions()
    lines = MAIN.split("\n")
    store.receive(URI, 5, [linspace(text="def linspace(new)")], Options())
    assert store.receive(URI, 4, [linspace(text="def linspace(old)")], Options()) == 0
    assert store.near(URI, lines, 2, len(lines[2]), Options())[0].text == "def linspace(new)"


def test_what_is_kept_is_bounded_in_count_text_and_documents() -> None:
    store = EditorDefinitions()
    many = [Sent(f"name{i}", LIB, i, f"def name{i}()") for i in range(MAX_SENT + 10)]
    assert store.receive(URI, 1, many, Options()) == MAX_SENT
    long = "\n".join(f"line {i} " + "x" * 200 for i in range(50))
    text = clean_text(long)
    assert len(text) <= MAX_TEXT_CHARS and text.count("\n") < MAX_TEXT_LINES
    assert (
        store.receive(URI, 2, [Sent("bad name", LIB, 0, "x"), Sent("", LIB, 0, "x")], Options())
        == 0
    )
    for i in range(MAX_DOCUMENTS + 5):
        store.receive(f"file:///work/app/m{i}.py", 1, [linspace()], Options())
    first = "file:///work/app/m0.py"
    assert store.near(first, MAIN.split("\n"), 2, 21, Options()) == []  # forgotten: the oldest
    last = f"file:///work/app/m{MAX_DOCUMENTS + 4}.py"
    assert store.near(last, MAIN.split("\n"), 2, 21, Options()) != []
