"""Fixtures: the real `spec-lsp serve` process over stdio, driven with real editors' capabilities.

One server per client kind per module (starting one costs seconds on a small machine); tests use
their own document URIs and restore any configuration they change.
"""

from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from lsp_helpers import CLIENTS, REQUEST_TIMEOUT_S, server_command, start_session
from pytest_lsp import ClientServerConfig, LanguageClient


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=server_command("tiny")),
    params=CLIENTS,
    scope="module",
)
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    await start_session(lsp_client, request.param)
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), REQUEST_TIMEOUT_S)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=server_command("tiny")))
async def fresh_client(lsp_client: LanguageClient):
    """A started, uninitialized server of its own, for tests about start-up and exit."""
    yield
    server = lsp_client._server
    if server is not None and server.returncode is None:  # the test failed before exiting
        server.kill()
        await asyncio.wait_for(server.wait(), REQUEST_TIMEOUT_S)


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=server_command("bundled")),
    params=CLIENTS,
    scope="module",
)
async def bundled_client(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    # Whole suggestions: these tests count model calls per answer, which an early answer
    # (`partialMs`, its own tests in test_early_answer.py) would split on a slow machine.
    await start_session(lsp_client, request.param, {"partialMs": 0})
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), REQUEST_TIMEOUT_S)
