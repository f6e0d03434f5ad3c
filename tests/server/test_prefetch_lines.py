"""Over LSP (the real `spec-lsp serve --preset tiny`): the suggestion after an accept needs no
model call, whether the user accepts the first line of a multi-line suggestion (the rest of the
shown suggestion answers: typed-through) or a suggestion whole (the prefetch answers). Tiny's
suggestions are gibberish; `spec-lsp/stats` tells where each answer came from."""

from __future__ import annotations

from typing import Any

import pytest
from lsp_helpers import (
    configure,
    delta,
    doc_uri,
    end_of,
    inline,
    insert,
    open_doc,
    stats,
    wait_until,
)
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")
# Where tiny's (seeded) model writes more than one line, then one line only.
MULTI = ("class A:\n    def f(self):\n        ", "def main():\n    x = [\n        ")
SINGLE = ("def add(a, b):\n    return ", "for i in range(10):\n    ")


async def suggestion(
    client: LanguageClient, name: str, texts: tuple[str, ...], lines: bool
) -> tuple[str, str, str, dict[str, Any]]:
    """(uri, text, suggestion, the stats before its request) at the first of `texts` where tiny
    suggests more than one line (`lines`) or exactly one."""
    for i, text in enumerate(texts):
        uri = doc_uri(f"{name}-{i}.py")
        open_doc(client, uri, text)
        before = await stats(client)
        result = await inline(client, uri, *end_of(text))
        shown = result.items[0].insert_text if result is not None and result.items else ""
        if isinstance(shown, str) and shown.strip() and ("\n" in shown.strip("\n")) == lines:
            return uri, text, shown, before
    raise AssertionError(f"tiny suggests {'several lines' if lines else 'one line'} nowhere")


def first_line(shown: str) -> str:
    """What an editor's accept-line inserts (Neovim's `partial.next_line`: up to the next line
    break, the one it begins with included; VS Code's is the same text)."""
    start = 1 if shown.startswith("\n") else 0
    end = shown.find("\n", start)
    return shown if end < 0 else shown[:end]


async def test_accepting_the_first_line_answers_the_rest_of_the_suggestion_without_a_model_call(
    client: LanguageClient,
) -> None:
    # A whole suggestion first: an early answer (`partialMs`; tests/server/test_early_answer.py)
    # would show its first lines only, on a machine where tiny takes over 100 ms to write it.
    # The whole-block rule off: its cap and block ends would reshape tiny's gibberish at these
    # places (tests/completion/test_whole_block.py tests it); typing through is what is tested.
    configure(client, {"partialMs": 0, "blockTokens": 0})
    try:
        uri, text, shown, _ = await suggestion(client, "accept-line", MULTI, lines=True)
    finally:
        configure(client, {"partialMs": 100, "blockTokens": 256})
    line = first_line(shown)
    assert 0 < len(line) < len(shown)
    before = await stats(client)
    insert(client, uri, 2, *end_of(text), line)  # accept-line
    after_text = text + line
    result = await inline(client, uri, *end_of(after_text))
    after = await stats(client)
    assert result is not None and [i.insert_text for i in result.items] == [shown[len(line) :]]
    assert delta(before, after, "typedThrough") == 1
    assert delta(before, after, "generated") == 0  # no model call


async def test_accepting_a_one_line_suggestion_whole_is_answered_by_the_prefetch(
    client: LanguageClient,
) -> None:
    """The case typed-through does not cover: nothing of the shown suggestion is left."""
    uri, text, shown, asked = await suggestion(client, "accept-whole", SINGLE, lines=False)

    async def prefetched() -> bool:
        return (await stats(client))["prefetch"]["done"] > asked["prefetch"]["done"]

    await wait_until(prefetched)  # the user's pause: long enough for the prefetch to finish
    before = await stats(client)
    insert(client, uri, 2, *end_of(text), shown)  # the accept
    await inline(client, uri, *end_of(text + shown))
    after = await stats(client)
    assert after["prefetch"]["hits"] - before["prefetch"]["hits"] == 1
    assert delta(before, after, "generated") == 0  # no model call
