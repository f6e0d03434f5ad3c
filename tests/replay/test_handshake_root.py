"""`spec-lsp replay --root DIR`: the replay's initialize opens DIR as the workspace folder (the
server indexes its symbols); without it, no folder, as an editor opened on single files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spec_lsp.replay.handshake import initialize


class InitializeRecorder:
    """The part of `LspClient` that `initialize` uses, keeping what it sent."""

    def __init__(self) -> None:
        self.sent: dict[str, Any] = {}

    async def request(self, method: str, params: Any, timeout: float) -> Any:
        self.sent[method] = params
        return {"capabilities": {"positionEncoding": "utf-16"}}

    def notify(self, method: str, params: Any) -> None:
        self.sent[method] = params

    async def drain(self) -> None:
        return None


async def test_a_root_is_sent_as_the_workspace_folder_and_none_without_it(tmp_path: Path) -> None:
    with_root, without = InitializeRecorder(), InitializeRecorder()
    await initialize(with_root, "utf-16", {}, str(tmp_path))  # type: ignore[arg-type]
    await initialize(without, "utf-16", {})  # type: ignore[arg-type]
    params = with_root.sent["initialize"]
    assert params["rootUri"] == tmp_path.resolve().as_uri()
    assert params["workspaceFolders"] == [
        {"uri": tmp_path.resolve().as_uri(), "name": tmp_path.name}
    ]
    assert without.sent["initialize"]["rootUri"] is None
    assert "workspaceFolders" not in without.sent["initialize"]
    assert "initialized" in with_root.sent
