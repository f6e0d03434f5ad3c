"""End-to-end with the real default pair (Qwen2.5-Coder 1.5B verifying, 0.5B drafting), through the
LSP server: a fill-in-the-middle hole in a function, answered with code that makes it correct.

The pair is fetched by `make setup` (`spec-lsp models fetch coder`, cached in ~/.cache/spec-lsp);
without it this test fails and says how to get it. The rest of the suite keeps its small models.
"""

from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from lsp_helpers import (
    REQUEST_TIMEOUT_S,
    doc_uri,
    inline,
    open_doc,
    server_command,
    start_session,
    stats,
)
from pytest_lsp import ClientServerConfig, LanguageClient

from spec_lsp.engine.sources import fetch

pytestmark = [pytest.mark.coder, pytest.mark.asyncio(loop_scope="module")]

PREFIX = '''def is_palindrome(text: str) -> bool:
    """True when text reads the same forwards and backwards, ignoring case and punctuation."""
    cleaned = [c.lower() for c in text if c.isalnum()]
    '''
SUFFIX = '''


def count_vowels(text: str) -> int:
    """How many of text's letters are vowels."""
    return sum(1 for c in text.lower() if c in "aeiou")
'''


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=server_command("coder")),
    params=["visual-studio-code"],
    scope="module",
)
async def coder_client(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    for name in ("qwen2.5-coder-1.5b-instruct-q4_k_m", "qwen2.5-coder-0.5b-instruct-q4_k_m"):
        assert fetch.is_cached(name), (
            f"{name} is not cached: run `make setup` (or `spec-lsp models fetch coder`)"
        )
    await start_session(lsp_client, request.param, {"partialMs": 0})
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), REQUEST_TIMEOUT_S)


async def test_the_real_pair_fills_a_hole_with_code_that_passes_its_checks(
    coder_client: LanguageClient,
) -> None:
    uri = doc_uri("coder_palindrome.py")
    open_doc(coder_client, uri, PREFIX + SUFFIX)
    line = PREFIX.count("\n")
    result = await inline(coder_client, uri, line, 4)
    assert result is not None and len(result.items) == 1
    text = result.items[0].insert_text
    assert isinstance(text, str) and text.strip(), repr(text)
    scope: dict[str, object] = {}
    exec(PREFIX + text + SUFFIX, scope)  # noqa: S102 - the test's own program and the model's line
    is_palindrome = scope["is_palindrome"]
    assert callable(is_palindrome)
    assert is_palindrome("A man, a plan, a canal: Panama") is True, text
    assert is_palindrome("spec-lsp") is False, text
    s = await stats(coder_client)
    assert s["model"]["preset"] == "coder" and s["generated"] >= 1
