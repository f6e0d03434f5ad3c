"""Over LSP, the real tiny server (tests/server/prompt_server.py writes its prompts): a definition
the editor's other language server knows, sent with `spec-lsp/definitions`, reaches the next
prompt after a pause; a private file's never does; malformed params are ignored, the server
answers on."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fuzz.lsp_process import ServerProcess

SERVER = [sys.executable, str(Path(__file__).with_name("prompt_server.py"))]
TEXT = "import numpy as np\nfrom vault import api_key_of\n\nkey = api_key_of(np.linspace("
pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ServerProcess, Path]]:
    prompts = tmp_path / "prompts.jsonl"
    server = ServerProcess(SERVER, {"SPEC_LSP_TEST_PROMPTS": str(prompts)})
    params = {
        "processId": None,
        "rootUri": None,
        "capabilities": {},
        "initializationOptions": {"preset": "tiny", "maxTokens": 4, "privateFiles": ["*/vault*"]},
    }
    server.result("initialize", params)
    server.notify("initialized", {})
    server.wait_loaded()
    yield server, prompts
    server.result("shutdown")
    server.notify("exit")
    server.close()


def definition(name: str, uri: str, text: str) -> dict[str, object]:
    start = {"line": 3, "character": 4}
    return {"name": name, "uri": uri, "range": {"start": start, "end": start}, "text": text}


def test_a_definition_sent_by_the_editor_reaches_the_prompt_and_a_private_one_never(
    served: tuple[ServerProcess, Path], tmp_path: Path
) -> None:
    server, prompts = served
    uri = (tmp_path / "main.py").as_uri()
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": TEXT}
    server.notify("textDocument/didOpen", {"textDocument": doc})
    server.notify("spec-lsp/definitions", {"definitions": "no document"})  # ignored
    server.notify("spec-lsp/definitions", {"textDocument": {"uri": uri}, "definitions": 3})
    lib = "file:///usr/lib/python3/dist-packages/numpy/core/function_base.py"
    told = [
        definition("linspace", lib, "```python\ndef linspace(start, stop, num=50)\n```"),
        definition("api_key_of", (tmp_path / "vault.py").as_uri(), "def api_key_of(): 'hunter2'"),
        {"name": "broken", "uri": 7, "text": None},  # a malformed item is skipped
    ]
    params = {"textDocument": {"uri": uri, "version": 1}, "definitions": told}
    server.notify("spec-lsp/definitions", params)
    time.sleep(1.1)  # a pause: the context may change
    lines = TEXT.split("\n")
    position = {"line": len(lines) - 1, "character": len(lines[-1])}
    ask = {"textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": 1}}
    server.result("textDocument/inlineCompletion", ask)
    prompt = str(json.loads(prompts.read_text().splitlines()[-1]))
    assert "# function_base.py\ndef linspace(start, stop, num=50)\n" in prompt
    assert "hunter2" not in prompt and "vault.py" not in prompt
