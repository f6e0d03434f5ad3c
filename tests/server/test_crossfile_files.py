"""Over LSP, the real tiny server takes the client's file deletes and renames (what they do to the
ring of other files' chunks: tests/completion/test_neighbours.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsp_helpers import open_doc, request
from lsprotocol import types
from pytest_lsp import LanguageClient

LINE = "def helper(value): return value * 2 + 1  # long enough to be a chunk"


def _files(kind: str, uris: list[Any]) -> Any:
    if kind == "delete":
        return types.DeleteFilesParams(files=[types.FileDelete(uri=u) for u in uris])
    return types.RenameFilesParams(
        files=[types.FileRename(old_uri=old, new_uri=new) for old, new in uris]
    )


@pytest.mark.asyncio(loop_scope="module")
async def test_the_server_takes_file_deletes_and_renames(client: LanguageClient) -> None:
    caps = client.init_result.capabilities  # type: ignore[attr-defined]
    operations = caps.workspace.file_operations if caps.workspace else None
    if operations is None or operations.did_delete is None:  # the client does not send them
        pytest.skip("this client declares no file operations")
    assert operations.did_rename is not None
    open_doc(client, "file:///w/gone.py", f"{LINE}\n")
    client.workspace_did_rename_files(_files("rename", [("file:///w/gone.py", "file:///w/x.py")]))
    client.workspace_did_delete_files(_files("delete", ["file:///w/x.py"]))
    await asyncio.sleep(0)
    status = await request(client, "spec-lsp/status")
    state = status["state"] if isinstance(status, dict) else status.state
    assert state == "ready"
