"""A remote backend's settings, from a preset's `[backend]` table, as plain values.

    [backend]
    kind = "llama-server"            # or "openai-compatible" (vLLM and others); "local" by default
    url = "http://127.0.0.1:8080"    # SPEC_LSP_REMOTE_URL overrides it (tests, a port chosen late)
    model = "qwen2.5-coder-7b"       # the served model's name (OpenAI-compatible servers need it)
    api_key_env = "SPEC_LSP_API_KEY" # the key is read from this environment variable, never the file
    connect_timeout_s = 2.0
    read_timeout_s = 10.0            # longest wait for the next streamed chunk
    verify_tls = true
    tokenizer = "Qwen/Qwen2.5-Coder-7B"  # optional: a local tokenizer for count_tokens
    slots = 4                        # llama-server: a stable id_slot per document (<= its -np);
                                     # 0, the default: any idle slot
    metrics_interval_s = 5.0         # poll /metrics for speculative counters at most this often
                                     # (after a generation, never on a keystroke); 0: never
    warmup = true                    # llama-server: a superseded request's prompt is evaluated
                                     # again, prompt-only, so the slot's cache keeps up (warmup.py)

The key's value is read only when a request is sent; it is never part of this object's repr,
of a log line or of stats.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

KINDS = ("local", "llama-server", "openai-compatible")
URL_ENV = "SPEC_LSP_REMOTE_URL"


class RemoteSpecError(ValueError):
    """A `[backend]` table that does not parse; the message is fit for a user."""


@dataclass(frozen=True)
class RemoteSpec:
    kind: str  # llama-server | openai-compatible
    url: str
    model: str = ""
    api_key_env: str | None = None
    connect_timeout_s: float = 2.0
    read_timeout_s: float = 10.0
    verify_tls: bool = True
    tokenizer: str | None = None
    fim: str = "none"  # the preset's FIM family (llama-server: /infill unless "none")
    slots: int = 0  # llama-server: documents spread over this many id_slots (0: any idle slot)
    metrics_interval_s: float = 5.0  # the least time between two /metrics polls (0: never)
    warmup: bool = True  # llama-server: prompt-only warm-ups for superseded requests

    @property
    def base_url(self) -> str:
        return (os.environ.get(URL_ENV) or self.url).rstrip("/")

    def headers(self) -> dict[str, str]:
        """Request headers; the API key from its environment variable, when one is named."""
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return {"Authorization": f"Bearer {key}"} if key else {}


def parse_backend(preset: str, table: object, fim: str = "none") -> RemoteSpec | None:
    """The preset's `[backend]` table as a RemoteSpec; None for the local engine."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise RemoteSpecError(f"preset {preset!r}: [backend] must be a table")
    kind = table.get("kind", "local")
    if kind not in KINDS:
        raise RemoteSpecError(f"preset {preset!r}: backend kind must be one of {', '.join(KINDS)}")
    if kind == "local":
        return None
    url = table.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise RemoteSpecError(f"preset {preset!r}: backend url must be an http(s) URL")
    try:
        return RemoteSpec(
            kind=kind,
            url=url,
            model=str(table.get("model", "")),
            api_key_env=_optional_str(table.get("api_key_env")),
            connect_timeout_s=float(table.get("connect_timeout_s", 2.0)),
            read_timeout_s=float(table.get("read_timeout_s", 10.0)),
            verify_tls=bool(table.get("verify_tls", True)),
            tokenizer=_optional_str(table.get("tokenizer")),
            fim=fim,
            slots=_count(table.get("slots", 0), "slots"),
            metrics_interval_s=float(table.get("metrics_interval_s", 5.0)),
            warmup=_flag(table.get("warmup", True), "warmup"),
        )
    except (TypeError, ValueError) as exc:
        raise RemoteSpecError(f"preset {preset!r}: [backend]: {exc}") from exc


def _count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a whole number >= 0")
    return value


def _flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false")
    return value


def _optional_str(value: object) -> str | None:
    return None if value is None else str(value)
