"""An OpenAI-compatible server (vLLM and others) as a backend: `/v1/completions`, streamed.

vLLM's completions endpoint rejects `suffix`, so the prompt is sent as the prompt builder made
it, FIM tokens included (the preset's `fim` family). The stream is server-sent events of
`{"choices": [{"text", "finish_reason"}]}` ending in `[DONE]`; with `stream_options.include_usage`
the last chunk carries `usage` (prompt tokens, and `prompt_tokens_details.cached_tokens` where the
engine reports prefix-cache hits). Drafted/accepted counts are not in the stream (vLLM exposes
them on `/metrics` only), so they stay 0 here.

count_tokens is the chars/4 estimate (a local tokenizer would need transformers, which this room
does not import; the budget in `spec_lsp.prompt` is in characters anyway).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from spec_lsp.engine.api import Capabilities, GenerationRequest, GenerationStats, StopReason
from spec_lsp.remote.spec import RemoteSpec
from spec_lsp.remote.stream import Chunk, RemoteBackend

FINISH: dict[str, StopReason] = {"length": "max_tokens", "stop": "eos"}
MAX_STOPS = 4  # the OpenAI API takes at most four stop sequences


class OpenAIBackend(RemoteBackend):
    label = "openai-compatible"

    def __init__(self, spec: RemoteSpec, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(spec, clock)
        # No other-files field in the API, and no prompt-only warm-ups (vLLM's prefix cache
        # keeps what a closed stream prefilled: docs/deploy.md).
        self.capabilities = Capabilities(status=True, engine_stats=True)

    def endpoint(self, request: GenerationRequest) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {
            "model": self.spec.model,
            "prompt": request.prompt,
            "max_tokens": request.max_new_tokens,
            "temperature": request.temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.temperature > 0:
            body["top_p"] = request.top_p
            if request.seed is not None:
                body["seed"] = request.seed
        if request.stop_strings:
            body["stop"] = list(request.stop_strings[:MAX_STOPS])
        return "/v1/completions", body

    def read_chunk(self, data: dict[str, Any]) -> Chunk:
        choices = data.get("choices") or []
        usage = data.get("usage") or {}
        text, finish = "", None
        if choices:
            text = choices[0].get("text") or ""
            finish = choices[0].get("finish_reason")
            if not isinstance(text, str):
                raise TypeError("text is not a string")
        figures: dict[str, Any] = {}
        if usage:
            details = usage.get("prompt_tokens_details") or {}
            figures = {
                "prompt_tokens": usage.get("prompt_tokens", 0),
                "completion_tokens": usage.get("completion_tokens", 0),
                "cached_tokens": details.get("cached_tokens") or 0,
            }
        # The finish_reason chunk may come before the usage chunk: keep reading until [DONE].
        stop_reason = FINISH.get(str(finish), "eos") if finish else ""
        return Chunk(text, False, stop_reason, figures)

    def fill_stats(self, stats: GenerationStats, figures: dict[str, Any]) -> None:
        prompt = int(figures.get("prompt_tokens", 0))
        cached = int(figures.get("cached_tokens", 0))
        stats.prompt_tokens = prompt
        stats.reused_tokens = cached
        stats.prefilled_tokens = max(0, prompt - cached)
        stats.generated_tokens = max(
            stats.generated_tokens, int(figures.get("completion_tokens", 0))
        )
