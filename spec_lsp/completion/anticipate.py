"""Anticipation: the work the service does beyond the request in hand.

- `prefetch_after`: on idle engine time, the suggestion the editor will ask for once the shown one
  is accepted whole, computed into the answer cache (`prefetch.py` owns the ones in flight).
- `alternatives`: for an explicit request, more suggestions that branch on the target's next most
  likely first tokens, each continued as usual (greedy, with speculation, over the prompt's KV).
- `warm_up`: on idle engine time, a document just opened (or open when the model is ready) has
  the KV of its prompts' common start prefilled: the prompt for the furthest cursor whose window
  starts at the top of the file (`PromptBuilder.head`), which every prompt for a cursor above it
  begins with, token for token. A cold file's first request then prefills only what follows.

Both build their prompts and rules exactly as a request at that position would (the service's
`_prompt`, the syntax port's cutter), so their answers are the ones that request would get.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from spec_lsp.completion.feedback import Suggestion
from spec_lsp.completion.live import GenerationFailed, Live
from spec_lsp.completion.prefetch import Ahead, after_accept
from spec_lsp.completion.reuse import Anchor
from spec_lsp.completion.syntax_port import Cut
from spec_lsp.documents import Document

if TYPE_CHECKING:
    from spec_lsp.completion.service import CompletionService


async def prefetch_after(
    service: CompletionService,
    doc: Document,
    version: int,
    pos: tuple[int, int],
    shown: str,
    early: Live | None = None,
) -> None:
    """The suggestion after `shown` (made at `pos` of `doc` at `version`) is accepted whole.
    `early`: the generation still running after an early answer (`shown` is its first lines):
    once it ends, its whole suggestion is the one whose accept is prefetched."""
    await asyncio.sleep(0)  # the answer goes out first
    s = service
    if early is not None:
        await asyncio.wait({early.job.future})
        await asyncio.sleep(0)  # its settling callbacks run first
        if not early.settled or not early.anchor.text.startswith(shown):
            return
        shown = early.anchor.text
    if s.docs.get(doc.uri) is not doc or doc.version != version or s.live.busy():
        return
    prefix, suffix = doc.prefix_suffix(*pos)
    new_prefix, row, col = after_accept(prefix, shown)
    text = new_prefix + suffix
    scratch = "prefetch:" + doc.uri  # the syntax layer's rules for the text after the accept
    s.syntax.open(scratch, doc.language_id, text)
    try:
        cutter = s.syntax.cutter(scratch, row, col, new_prefix, suffix)
        context = s.syntax.context(scratch, row, col)
    finally:
        s.syntax.close(scratch)
    if cutter.mode == "none" or s._prompts is None:
        return
    s.neighbours.settle(keep=doc.uri)  # idle time: what the request after the accept will see
    prompt = s._prompt(doc, text.split("\n"), row, col, context, remember=False)
    cut = Cut(cutter, prompt.lead, prompt.markers)
    key = s._key(prompt, cut)
    if s.reuse.cache.get(key) is not None:
        return
    anchor = Anchor(new_prefix, suffix)
    live = s.live.start(doc.uri, prompt.text, cut, anchor, s.options, prefetch=True)
    ahead = Ahead(doc.uri, text, key, live, len(prefix), len(new_prefix))
    live.keep = ahead.toward  # accepting a line or a word of it keeps this prefetch running
    answer = await s.prefetch.run(ahead)
    if answer is not None:
        s.reuse.cache.put(key, answer)


async def alternatives(
    service: CompletionService, doc: Document, pos: tuple[int, int], first: str, n: int
) -> list[Suggestion]:
    """Up to n - 1 suggestions other than `first` at `pos`, issued (ids) in rank order."""
    s, version, texts = service, doc.version, [first]
    prefix, suffix = doc.prefix_suffix(*pos)
    cutter = s.syntax.cutter(doc.uri, *pos, prefix, suffix)
    prompt = s._prompt(doc, doc.lines, *pos, s.syntax.context(doc.uri, *pos))
    cut = Cut(cutter, prompt.lead, prompt.markers)
    for rank in range(1, n + 1):  # one rank more: a branch may trim to one already had
        if len(texts) >= n:
            break
        anchor = Anchor(prefix, suffix)
        live = s.live.start(doc.uri, prompt.text, cut, anchor, s.options, first_rank=rank)
        try:
            result = await s.live.wait(live.job)
        except GenerationFailed:  # the first suggestion stands; alternatives end here
            break
        if result is None or doc.version != version:
            break
        s.live.settle(live, result)
        if anchor.text and anchor.text not in texts:
            texts.append(anchor.text)
    return [s.feedback.issue(text) for text in texts[1:]]


def warm_up(service: CompletionService, doc: Document) -> None:
    """Starts prefilling `doc`'s KV for the start of its prompts (see the module docstring), as
    a prefetch: superseded by the document's next generation, cancelled by a request for another
    document, one short prefill pass at most. Only on a backend that stops within a pass and
    keeps what it computed (the local engine; `remote.warmup` has llama-server's own)."""
    s = service
    if s._prompts is None or not s._serving(doc) or not s.options.kv_reuse:
        return
    if not s.worker.capabilities.warm_up:  # a remote engine warms its own way
        return
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop (a synchronous caller): nothing runs in the background
        return
    if s.live.running(doc.uri) is not None:
        return
    s.neighbours.settle(keep=doc.uri)  # the chunks of other files its first request will see
    row, col = s._prompts.head(doc.lines, s._files(doc, doc.lines)[0])
    prefix, suffix = doc.prefix_suffix(row, col)
    cutter = s.syntax.cutter(doc.uri, row, col, prefix, suffix)
    prompt = s._prompt(doc, doc.lines, row, col, s.syntax.context(doc.uri, row, col), False)
    cut = Cut(cutter, prompt.lead, prompt.markers)
    live = s.live.start(doc.uri, prompt.text, cut, Anchor(prefix, suffix), s.options, warm=True)
    live.keep = lambda _text: True  # no keystroke makes the start of the file's prompts useless
    s.prefetch.warming(live)
