"""`python -m spec_lsp.benchmarks.prompt_churn SESSION...`: the tokens each request's prompt
re-prefills, from the prompts alone, on recorded typing sessions.

A replay's KV figures move with the machine's load (a busy machine cancels most requests before
they reach the model); this counts what the prompts themselves cost. Each session's
`didOpen`/`didChange` messages go, in order, to a real `CompletionService` on a backend that
records each request's prompt and answers nothing; the service's clock is the session's own, so
its pauses are the recorded ones (other files' context changes only there). For each request of a
document, the prompt's tokens past its longest common prefix with the document's previous prompt
are what a KV cache holding that prompt re-prefills: the figure per request (mean, p50, p90, max;
a document's first prompt, prefilled whole, is counted apart), and how many requests re-prefill 64
tokens or more (a moved window or changed context).

`--preset` picks the prompt format and tokenizer (the model is not loaded); `--root DIR` opens DIR
as the workspace folder, whose symbols are indexed first (definitions in the prompts);
`--init-options` sets client options (`{"definitions": false}`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from spec_lsp.completion import CompletionService
from spec_lsp.config import Options, merge
from spec_lsp.engine.api import BackendBase, GenerationRequest, GenerationResult, GenerationStats
from spec_lsp.presets import load_preset
from spec_lsp.replay.format import Session, read_session
from spec_lsp.worker import InferenceWorker, ModelInfo

JUMP_TOKENS = 64  # a request re-prefilling this many or more: the window or the context moved


class PromptRecorder(BackendBase):
    """Records each request's prompt (by document) and answers nothing."""

    def __init__(self) -> None:
        self.prompts: list[tuple[str, str]] = []

    def generate(self, request: GenerationRequest) -> GenerationResult:
        if request.max_new_tokens > 1:  # a warm-up's prefill is not a request
            self.prompts.append((request.doc_id or "", request.prompt))
        return GenerationResult("", stats=GenerationStats(stop_reason="max_tokens"))

    def count_tokens(self, text: str) -> int:
        return len(text)

    def forget(self, doc_id: str) -> None:
        return None


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Churn:
    refills: list[int] = field(default_factory=list)  # tokens re-prefilled, per request
    prompt_tokens: list[int] = field(default_factory=list)
    cold: int = 0  # documents' first prompts (prefilled whole, not counted in `refills`)

    def figures(self) -> dict[str, float]:
        r = sorted(self.refills) or [0]
        return {
            "requests": len(self.refills),
            "promptTokensMean": round(statistics.mean(self.prompt_tokens or [0]), 1),
            "refillMean": round(statistics.mean(r), 2),
            "refillP50": r[len(r) // 2],
            "refillP90": r[int(len(r) * 0.9)],
            "refillMax": r[-1],
            "jumps": sum(1 for x in r if x >= JUMP_TOKENS),
            "refillTotal": sum(r),
            "coldPrompts": self.cold,
        }


async def play(session: Session, service: CompletionService, clock: Clock) -> None:
    """Sends the session's document messages to `service` at their times; each completion
    request is asked (and answered) before the next message."""
    encoding = session.header.position_encoding
    for event in session.events:
        clock.now = event.t / 1000
        method, params = event.msg.get("method"), event.msg.get("params") or {}
        doc = params.get("textDocument", {})
        if method == "textDocument/didOpen":
            service.did_open(doc["uri"], doc["languageId"], doc["version"], doc["text"])
        elif method == "textDocument/didChange":
            changes = [(_range(c.get("range")), c["text"]) for c in params["contentChanges"]]
            service.did_change(doc["uri"], doc["version"], changes, encoding)  # type: ignore[arg-type]
        elif method == "textDocument/didClose":
            service.did_close(doc["uri"])
        elif method in ("textDocument/inlineCompletion", "textDocument/completion"):
            pos = params["position"]
            await service.complete(doc["uri"], pos["line"], pos["character"], encoding)  # type: ignore[arg-type]


def _range(r: dict[str, Any] | None) -> tuple[int, int, int, int] | None:
    if r is None:
        return None
    return (r["start"]["line"], r["start"]["character"], r["end"]["line"], r["end"]["character"])


def churn(prompts: Iterable[tuple[str, str]], tokenize: Any) -> Churn:
    out = Churn()
    last: dict[str, list[int]] = {}  # each document's previous prompt's tokens
    for doc, prompt in prompts:
        ids = tokenize(prompt)
        before = last.get(doc, [])
        common = 0
        for a, b in zip(before, ids, strict=False):
            if a != b:
                break
            common += 1
        if doc in last:
            out.refills.append(len(ids) - common)
        else:
            out.cold += 1
        out.prompt_tokens.append(len(ids))
        last[doc] = ids
    return out


async def measure(sessions: list[Session], info: ModelInfo, options: Options, root: str | None):
    """The prompts of every session's requests, one service per session (as a fresh editor)."""
    prompts: list[tuple[str, str]] = []
    for session in sessions:
        backend, clock = PromptRecorder(), Clock()
        worker = InferenceWorker(asyncio.get_running_loop())
        worker.backend, worker.state, worker.info = backend, "ready", info
        service = CompletionService(worker, options, clock=clock)
        service.model_ready()
        if root:
            repo = service.planner.repo
            repo.index.roots = (root,)
            repo.index.build([root])  # what the server starts in the background, done first
        await play(session, service, clock)
        prompts += backend.prompts
        worker.stop()
    return prompts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("sessions", nargs="+", help="session files (.jsonl)")
    parser.add_argument("--preset", default="coder", help="prompt format and tokenizer")
    parser.add_argument("--root", help="a workspace folder to index first")
    parser.add_argument("--init-options", default="{}", help="client options (JSON)")
    args = parser.parse_args(argv)
    from spec_lsp.engine.from_source import load_tokenizer

    preset = load_preset(args.preset)
    info = ModelInfo(preset=preset.name, fim=preset.fim, context_tokens=preset.context_tokens)
    base = Options(prefetch=False, partial_ms=0, short_window=0)
    options, warnings = merge(base, json.loads(args.init_options))
    if warnings:
        parser.error("; ".join(warnings))
    sessions = [read_session(p) for p in args.sessions]
    prompts = asyncio.run(measure(sessions, info, options, args.root))
    tokenizer = load_tokenizer(preset.target)
    figures = churn(prompts, lambda text: tokenizer.encode(text, add_special_tokens=False))
    result = figures.figures() | {"preset": preset.name, "root": args.root or ""}
    for key, value in result.items():
        print(f"{key:>18}  {value}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
