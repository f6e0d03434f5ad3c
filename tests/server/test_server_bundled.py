"""End-to-end with the real bundled model (SmolLM2-135M): real suggestions, typed through."""

from __future__ import annotations

import pytest
from lsp_helpers import doc_uri, inline, insert, open_doc, stats, utf16_len
from pytest_lsp import LanguageClient

pytestmark = [pytest.mark.bundled, pytest.mark.asyncio(loop_scope="module")]

SOURCE = '''import math


def circle_area(radius: float) -> float:
    """The area of a circle."""
    return math.pi * radius ** 2


def circle_circumference(radius: float) -> float:
    """The circumference of a circle."""
    return '''


async def test_bundled_model_completes_python_and_reports_its_preset(
    bundled_client: LanguageClient,
) -> None:
    uri = doc_uri("bundled_circle.py")
    open_doc(bundled_client, uri, SOURCE)
    lines = SOURCE.split("\n")
    line, char = len(lines) - 1, utf16_len(lines[-1])
    result = await inline(bundled_client, uri, line, char)
    assert result is not None and len(result.items) == 1
    text = result.items[0].insert_text
    assert isinstance(text, str) and text.strip()
    s = await stats(bundled_client)
    assert s["model"]["preset"] == "bundled" and s["generated"] >= 1
    assert s["kvReuse"]["promptTokens"] > 0


async def test_bundled_typing_through_reuses_the_suggestion_without_a_model_call(
    bundled_client: LanguageClient,
) -> None:
    uri = doc_uri("bundled_through.py")
    open_doc(bundled_client, uri, SOURCE)
    lines = SOURCE.split("\n")
    line, char = len(lines) - 1, utf16_len(lines[-1])
    first = await inline(bundled_client, uri, line, char)
    assert first is not None and first.items
    suggestion = first.items[0].insert_text
    assert isinstance(suggestion, str) and len(suggestion) >= 2
    before = await stats(bundled_client)
    typed = suggestion[0]
    insert(bundled_client, uri, 2, line, char, typed)
    again = await inline(bundled_client, uri, line, char + utf16_len(typed))
    after = await stats(bundled_client)
    assert again is not None and [i.insert_text for i in again.items] == [suggestion[1:]]
    assert after["generated"] == before["generated"]


async def test_bundled_suggestion_after_indentation_adds_no_extra_blank(
    bundled_client: LanguageClient,
) -> None:
    uri = doc_uri("bundled_indent.py")
    open_doc(bundled_client, uri, "def add(a, b):\n    ")
    result = await inline(bundled_client, uri, 1, 4)
    assert result is not None and len(result.items) == 1
    text = result.items[0].insert_text
    assert isinstance(text, str) and text.strip() and not text[0].isspace(), repr(text)
