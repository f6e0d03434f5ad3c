"""Over LSP, the real tiny server (tests/server/prompt_server.py writes its prompts): a definition
from another file of the workspace folder reaches the prompt; a file created on disk and announced
with `workspace/didChangeWatchedFiles` is indexed; a private file's definitions never show."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fuzz.lsp_process import ServerProcess

SERVER = [sys.executable, str(Path(__file__).with_name("prompt_server.py"))]
SHAPES = 'class Rectangle:\n    """An axis-aligned rectangle."""\n    def scaled(self, k): pass\n'
MAIN = "from shapes import Rectangle\nfrom tokens import api_key_of\nfrom later import born_late\n"
pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ServerProcess, Path]]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "shapes.py").write_text(SHAPES)
    (root / "tokens.py").write_text("def api_key_of(user): return 'hunter2'\n")
    prompts = tmp_path / "prompts.jsonl"
    server = ServerProcess(SERVER, {"SPEC_LSP_TEST_PROMPTS": str(prompts)})
    params = {
        "processId": None,
        "rootUri": root.as_uri(),
        "workspaceFolders": [{"uri": root.as_uri(), "name": "ws"}],
        "capabilities": {},
        "initializationOptions": {"preset": "tiny", "maxTokens": 4, "privateFiles": ["tokens.py"]},
    }
    server.result("initialize", params)
    server.notify("initialized", {})
    server.wait_loaded()
    yield server, prompts
    server.result("shutdown")
    server.notify("exit")
    server.close()


def ask(server: ServerProcess, uri: str, text: str, version: int) -> None:
    lines = text.split("\n")
    if version == 1:
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        server.notify("textDocument/didOpen", {"textDocument": doc})
    else:
        change = {"text": text}
        server.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
        )
    position = {"line": len(lines) - 1, "character": len(lines[-1])}
    params = {"textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": 1}}
    server.result("textDocument/inlineCompletion", params)


def last_prompt(prompts: Path) -> str:
    return str(json.loads(prompts.read_text().splitlines()[-1]))


def test_definitions_from_the_workspace_reach_the_prompt_and_follow_the_disk(
    served: tuple[ServerProcess, Path],
) -> None:
    server, prompts = served
    root = prompts.parent / "ws"
    uri = (root / "main.py").as_uri()
    deadline = time.monotonic() + 60
    text = MAIN + "\nkey = api_key_of(Rectangle("
    version = 1
    while True:  # the index is built in the background: ask again until it has shapes.py
        ask(server, uri, text, version)
        version += 1
        if "class Rectangle:" in last_prompt(prompts) or time.monotonic() > deadline:
            break
        time.sleep(1.1)  # a pause: the context may change
    prompt = last_prompt(prompts)
    assert '# shapes.py\nclass Rectangle:\n    """An axis-aligned rectangle."""' in prompt
    assert "hunter2" not in prompt and "tokens.py" not in prompt  # private: never indexed
    (root / "later.py").write_text("def born_late(x: int) -> str:\n    'Made after the build.'\n")
    change = {"uri": (root / "later.py").as_uri(), "type": 1}  # created
    server.notify("workspace/didChangeWatchedFiles", {"changes": [change]})
    time.sleep(1.1)
    ask(server, uri, MAIN + "\nname = born_late(", version)
    assert "def born_late(x: int) -> str:" in last_prompt(prompts)


def test_an_added_workspace_folder_is_indexed_and_a_removed_ones_files_leave(
    served: tuple[ServerProcess, Path],
) -> None:
    server, prompts = served
    extra = prompts.parent / "extra"
    extra.mkdir()
    (extra / "units.py").write_text("def to_metres(feet: float) -> float:\n    'Feet to m.'\n")
    folder = {"uri": extra.as_uri(), "name": "extra"}
    change = {"event": {"added": [folder], "removed": []}}
    server.notify("workspace/didChangeWorkspaceFolders", change)
    uri = (prompts.parent / "ws" / "main.py").as_uri()
    text = "from units import to_metres\n\nx = to_metres("
    deadline, version = time.monotonic() + 60, 1
    while True:  # the added folder is indexed in the background, while the user types on
        blank = "\n" * (1 + version % 2)  # an edit before each pause, as typing makes one
        ask(server, uri, text.replace("\n\n", blank, 1), version)
        version += 1
        if "def to_metres" in last_prompt(prompts) or time.monotonic() > deadline:
            break
        time.sleep(1.1)
    assert "def to_metres(feet: float) -> float:" in last_prompt(prompts)
    change = {"event": {"added": [], "removed": [folder]}}
    server.notify("workspace/didChangeWorkspaceFolders", change)
    server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    time.sleep(1.1)
    ask(server, uri, text, 1)  # opened again: its context is computed anew
    assert "def to_metres" not in last_prompt(prompts)
