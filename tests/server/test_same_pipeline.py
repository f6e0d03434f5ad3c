"""`spec-lsp complete` and the server make the same suggestion: both run a `CompletionService`.

The command runs in this process (tiny preset, a fresh model per position); the server is the real
`spec-lsp serve --preset tiny` process, each position in a document of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import (
    CLIENTS,
    REQUEST_TIMEOUT_S,
    doc_uri,
    inline,
    open_doc,
    server_command,
    start_session,
)
from pytest_lsp import ClientServerConfig, LanguageClient

from spec_lsp import cli

SOURCE = (
    "import os\n"
    "\n"
    "\n"
    "def join(parts):\n"
    "    return os.path.join()\n"
    "\n"
    "\n"
    "def area(r):\n"
    "    \n"
    "\n"
    "\n"
    "total = \n"
)
POSITIONS = {  # 0-based (line, character)
    "mid-line, before an auto-closed parenthesis": (4, 24),
    "empty line after indentation": (8, 4),
    "end of line": (11, 8),
    "end of a line of code": (3, 16),
    "inside a word (nothing to suggest)": (0, 3),
}


@pytest.fixture(scope="module")
def from_command(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    path = Path(tmp_path_factory.mktemp("same")) / "shapes.py"
    path.write_text(SOURCE, encoding="utf-8")
    out: dict[str, str] = {}
    for name, (line, char) in POSITIONS.items():
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
            code = cli.main(
                ["complete", f"{path}:{line + 1}:{char + 1}", "--preset", "tiny", "--json"]
            )
        assert code == 0
        out[name] = json.loads(printed.getvalue())["suggestion"]
    return out


@pytest_lsp.fixture(config=ClientServerConfig(server_command=server_command("tiny")))
async def server(lsp_client: LanguageClient):
    await start_session(lsp_client, CLIENTS[0])
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), REQUEST_TIMEOUT_S)


async def test_complete_and_the_server_suggest_the_same_text_at_each_position(
    from_command: dict[str, str], server: LanguageClient
) -> None:
    from_server: dict[str, str] = {}
    for i, (name, (line, char)) in enumerate(POSITIONS.items()):
        uri = doc_uri(f"same-pipeline-{i}.py")
        open_doc(server, uri, SOURCE)
        result = await inline(server, uri, line, char)
        items = result.items if result is not None else []
        text = items[0].insert_text if items else ""
        from_server[name] = text if isinstance(text, str) else text.value
    assert from_server == from_command
    assert sum(1 for text in from_command.values() if text) >= 3  # not agreeing on nothing
    assert from_command["inside a word (nothing to suggest)"] == ""
