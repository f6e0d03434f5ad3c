"""Fixtures: the real `spec-lsp serve` process over stdio, driven with real editors' capabilities."""

from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from lsp_helpers import CLIENTS, REQUEST_TIMEOUT_S, server_command, start_session
from pytest_lsp import ClientServerConfig, LanguageClient


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=server_command("tiny")), params=CLIENTS
)
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    await start_session(lsp_client, request.param)
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), REQUEST_TIMEOUT_S)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=server_command("tiny")))
async def raw_client(lsp_client: LanguageClient):
    """A started server that the test initializes itself (with its own options)."""
    yield
