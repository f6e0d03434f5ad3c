"""llama.cpp's `llama-server` as a backend.

Prefix-only presets (fim = "none") stream from `/completion` with the prompt as built; FIM presets
stream from `/infill`: the prompt builder's FIM prompt is split back into `input_prefix` and
`input_suffix` (the server applies the model's own FIM tokens). Other files' chunks, which the
prompt builder renders ahead of the FIM prompt, go as `input_extra` instead (the server renders
them in the model's repository format): the completion service tells the backend, per document,
the rendered head and the chunks in it (`other_files`, run in the worker thread before the
generation), and a prompt that starts with that head is sent without it. The ring changes only on
a pause and keeps its order, so `input_extra` is byte-identical from keystroke to keystroke and the
slot's prompt cache holds. With `slots` in the preset, each document has its own `id_slot`
(`slots.py`). Greedy sampling (`top_k` 1) unless a temperature is asked; `cache_prompt` keeps the
slot's KV for the next keystroke; `timings_per_token` makes every chunk carry the engine's figures,
so a stream closed early still reports them. A request closed before its first token is sent
again prompt-only (`warmup_body`, `warmup.py`), so the slot's prompt cache keeps up with typing.

count_tokens asks the server's `/tokenize` (one short request, its answer read within the
preset's caps), and falls back to the chars/4 estimate when it cannot.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from functools import cache
from typing import Any

import httpx

from spec_lsp.engine.api import (
    Capabilities,
    FileChunks,
    GenerationRequest,
    GenerationStats,
    StopReason,
)
from spec_lsp.prompt import template_for
from spec_lsp.remote import body
from spec_lsp.remote.slots import OFF, Slots
from spec_lsp.remote.spec import RemoteSpec
from spec_lsp.remote.sse import RemoteError
from spec_lsp.remote.stream import Chunk, RemoteBackend

STOP_TYPES: dict[str, StopReason] = {"limit": "max_tokens", "eos": "eos", "word": "stop_string"}


@cache
def _fim_pattern(family: str) -> re.Pattern[str] | None:
    template = template_for(family)
    if template.layout == "prefix":
        return None
    parts = re.split(r"(\{prefix\}|\{suffix\})", template.pattern)
    regex = "".join(
        f"(?P<{p[1:-1]}>.*)" if p in ("{prefix}", "{suffix}") else re.escape(p) for p in parts
    )
    if template.layout == "psm":  # the typed middle after the middle marker (`prompt.Prompt`)
        regex += "(?P<middle>.*)"
    return re.compile(regex + r"\Z", re.DOTALL)


def split_fim(prompt: str, family: str) -> tuple[str, str, str] | None:
    """(prefix, suffix, typed middle) of a prompt rendered with `family`'s template; None if it
    is not one. The middle ("" but for PSM) goes as /infill's `prompt`, after its middle marker:
    llama-server then keeps the prefix and suffix it cached while the middle is typed."""
    pattern = _fim_pattern(family)
    match = pattern.match(prompt) if pattern is not None else None
    if match is None:
        return None
    return match["prefix"], match["suffix"], match.groupdict().get("middle") or ""


class LlamaServerBackend(RemoteBackend):
    label = "llama-server"

    def __init__(self, spec: RemoteSpec, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(spec, clock)
        self.slots = Slots(spec.slots)
        self._files: dict[str, tuple[str, FileChunks]] = {}  # doc id -> (rendered head, chunks)
        self.capabilities = Capabilities(
            other_files=True,
            status=True,
            engine_stats=True,
            remote_warmups=self.warmer is not None,
        )

    def other_files(self, doc_id: str, head: str, chunks: FileChunks) -> None:
        """The other files' text `head` that leads the document's next prompts, and the chunks
        rendered in it (sent as `input_extra` in its place)."""
        if head:
            self._files[doc_id] = (head, chunks)
        else:
            self._files.pop(doc_id, None)

    def forget(self, doc_id: str) -> None:
        super().forget(doc_id)
        self.slots.forget(doc_id)
        self._files.pop(doc_id, None)

    def endpoint(self, request: GenerationRequest) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {
            "n_predict": request.max_new_tokens,
            "stream": True,
            "cache_prompt": True,
            "timings_per_token": True,
            "stop": list(request.stop_strings),
        }
        if request.temperature > 0:
            body.update(temperature=request.temperature, top_p=request.top_p)
            if request.seed is not None:
                body["seed"] = request.seed
        else:
            body.update(temperature=0.0, top_k=1, samplers=["top_k"])
        if (slot := self.slots.slot(request.doc_id)) != OFF:
            body["id_slot"] = slot
        head, chunks = self._files.get(request.doc_id or "", ("", ()))
        prompt = request.prompt
        if head and prompt.startswith(head):
            prompt = prompt[len(head) :]
        else:
            chunks = ()
        fim = split_fim(prompt, self.spec.fim) if self.spec.fim != "none" else None
        if fim is None:
            return "/completion", {"prompt": request.prompt, **body}
        prefix, suffix, middle = fim
        return "/infill", {
            "input_extra": [{"filename": name, "text": text} for name, text in chunks],
            "input_prefix": prefix,
            "input_suffix": suffix,
            "prompt": middle,
            **body,
        }

    def warmup_body(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The same prompt, slot and endpoint, not streamed, no token wanted: llama-server
        evaluates the whole prompt into the slot's cache (`cache_prompt`) and answers once."""
        warm = {k: v for k, v in body.items() if k not in ("stop", "timings_per_token")}
        warm.update(n_predict=0, stream=False, cache_prompt=True)
        return warm

    def read_chunk(self, data: dict[str, Any]) -> Chunk:
        text = data.get("content", "")
        if not isinstance(text, str):
            raise TypeError("content is not a string")
        figures = dict(data.get("timings") or {})
        for key in ("tokens_evaluated", "tokens_cached"):
            if key in data:
                figures[key] = data[key]
        done = data.get("stop") is True
        stop_reason = STOP_TYPES.get(str(data.get("stop_type")), "eos") if done else ""
        return Chunk(text, done, stop_reason, figures)

    def fill_stats(self, stats: GenerationStats, figures: dict[str, Any]) -> None:
        cached = int(figures.get("cache_n", 0))
        evaluated = int(figures.get("prompt_n", 0))
        stats.reused_tokens = cached
        stats.prefilled_tokens = evaluated
        stats.prompt_tokens = int(figures.get("tokens_evaluated", cached + evaluated))
        stats.prefill_ms = float(figures.get("prompt_ms", 0.0))
        stats.verify_ms = float(figures.get("predicted_ms", 0.0))
        stats.generated_tokens = max(stats.generated_tokens, int(figures.get("predicted_n", 0)))
        stats.proposed_tokens = int(figures.get("draft_n", 0))
        stats.accepted_tokens = int(figures.get("draft_n_accepted", 0))

    def count_tokens(self, text: str) -> int:
        """The server's own count (`/tokenize`), else the chars/4 estimate."""
        s = self.spec
        try:
            with httpx.stream(
                "POST",
                f"{s.base_url}/tokenize",
                json={"content": text},
                headers=s.headers(),
                timeout=s.connect_timeout_s,
                **s.client_options(),
            ) as response:
                response.raise_for_status()
                answer = body.read(response, self.answer_cap())
            return len(json.loads(answer)["tokens"])
        except (httpx.HTTPError, RemoteError, ValueError, KeyError, TypeError):
            return super().count_tokens(text)
