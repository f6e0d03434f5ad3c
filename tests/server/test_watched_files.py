"""A client that registers capabilities dynamically (VS Code's) is asked for
`workspace/didChangeWatchedFiles` on the source files the symbol index reads; one that cannot
(Neovim 0.10's) is not asked."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import pytest_lsp
from lsp_helpers import CLIENTS, REQUEST_TIMEOUT_S, server_command, start_session
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=server_command("tiny")), params=CLIENTS
)
async def watched(lsp_client: LanguageClient, request: pytest.FixtureRequest) -> Any:
    lsp_client.spec = request.param  # type: ignore[attr-defined]
    await start_session(lsp_client, request.param)  # it answers and keeps the registrations
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), REQUEST_TIMEOUT_S)


async def test_source_file_changes_are_asked_for_where_the_client_can_register(
    watched: LanguageClient,
) -> None:
    # Sent while `initialized` is handled, before any answer to the status requests that
    # `start_session` waited on: it has arrived if it was sent.
    client, registered = watched.spec, watched.registrations  # type: ignore[attr-defined]
    methods = [r.method for r in registered]
    if client.startswith("neovim"):  # dynamicRegistration false for watched files
        assert types.WORKSPACE_DID_CHANGE_WATCHED_FILES not in methods
        return
    assert methods.count(types.WORKSPACE_DID_CHANGE_WATCHED_FILES) == 1
    (registration,) = registered
    options = registration.register_options
    globs = [
        w["globPattern"] if isinstance(w, dict) else w.glob_pattern for w in _watchers(options)
    ]
    assert globs == ["**/*.{cjs,cts,go,js,jsx,mjs,mts,py,pyi,rs,ts,tsx}"]


def _watchers(options: Any) -> list[Any]:
    return list(options["watchers"] if isinstance(options, dict) else options.watchers)
