"""The replay's handshake with a server: `initialize` as a plain editor sends it (the session's
position encoding), then `spec-lsp/status` polled until the model is ready. Used by the replayer
and by `bench next-edit`, which drive a real server the same way.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from spec_lsp.replay.client import LspClient, ServerError

METHOD_NOT_FOUND = -32601


def client_capabilities(encoding: str) -> dict[str, Any]:
    return {
        "general": {"positionEncodings": [encoding]},
        "textDocument": {
            "synchronization": {"dynamicRegistration": False, "didSave": False},
            "inlineCompletion": {"dynamicRegistration": False},
            "completion": {"completionItem": {"snippetSupport": False}},
        },
        "window": {"workDoneProgress": True, "showMessage": {}},
        "workspace": {"configuration": False},
    }


async def initialize(
    client: LspClient, encoding: str, options: dict[str, Any], root: str | None = None
) -> None:
    """`root`: a workspace folder to open (the server indexes its files); None: no folder, as an
    editor opened on single files."""
    folder = Path(root).resolve().as_uri() if root else None
    params = {
        "processId": os.getpid(),
        "clientInfo": {"name": "spec-lsp-replay", "version": "1"},
        "rootUri": folder,
        "capabilities": client_capabilities(encoding),
        "initializationOptions": options,
    }
    if root:
        params["workspaceFolders"] = [{"uri": folder, "name": Path(root).name}]
    result = await client.request("initialize", params, timeout=120.0)
    chosen = (result or {}).get("capabilities", {}).get("positionEncoding", "utf-16")
    if chosen != encoding:
        raise ServerError(
            f"the server chose position encoding {chosen}; the session needs {encoding}"
        )
    client.notify("initialized", {})
    await client.drain()


async def wait_ready(client: LspClient, timeout_s: float) -> Any:
    """Polls spec-lsp/status until the model is loaded; None for servers without it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        try:
            status = await client.request("spec-lsp/status", {}, timeout=30.0)
        except ServerError as exc:
            if exc.code != METHOD_NOT_FOUND:
                raise
            return None
        state = (status or {}).get("state")
        if state == "failed":
            raise ServerError(f"the server failed to load its model: {status.get('error')}")
        if state != "loading":
            return status
        if loop.time() > deadline:
            raise ServerError(f"the model did not load within {timeout_s:.0f} s")
        await asyncio.sleep(0.25)
