"""A remote backend's settings, from a preset's `[backend]` table, as plain values.

    [backend]
    kind = "llama-server"            # or "openai-compatible" (vLLM and others); "local" by default
    url = "http://127.0.0.1:8080"    # SPEC_LSP_REMOTE_URL overrides it (tests, a port chosen late)
    model = "qwen2.5-coder-7b"       # the served model's name (OpenAI-compatible servers need it)
    api_key_env = "SPEC_LSP_API_KEY" # the key is read from this variable, never from the file
    connect_timeout_s = 2.0
    read_timeout_s = 10.0            # longest wait for the next streamed chunk
    verify_tls = true
    max_stream_bytes = 4194304       # a stream longer than this (4 MiB) is closed: an error
    max_stream_s = 30.0              # so is one still running after this many seconds
    slots = 4                        # llama-server: a stable id_slot per document (<= its -np);
                                     # 0, the default: any idle slot
    metrics_interval_s = 5.0         # poll /metrics for speculative counters at most this often
                                     # (after a generation, never on a keystroke); 0: never
    warmup = true                    # llama-server: a superseded request's prompt is evaluated
                                     # again, prompt-only, so the slot's cache keeps up (warmup.py)

The key's value is read only when a request is sent; it is never part of this object's repr,
of a log line or of stats, and never sent over plain `http://` to a host other than this machine's
loopback (`headers` refuses: `InsecureKeyError`), since anyone on the path could read it. Nor
through a proxy in clear: httpx takes `HTTP_PROXY`/`ALL_PROXY` from the environment for every
address, loopback included, so a loopback engine is reached with `trust_env` off (`client_options`,
as `launch.py` does), directly; the key then goes through a proxy only to an `https://` engine,
which the proxy only tunnels (CONNECT) and cannot read.

There is no `tokenizer` key: the remote backends count tokens with the engine's own `/tokenize`
(llama-server) or the chars/4 estimate (`stream.CHARS_PER_TOKEN`), and the prompt budget is in
characters anyway; an older preset's `tokenizer` is ignored.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

KINDS = ("local", "llama-server", "openai-compatible")
URL_ENV = "SPEC_LSP_REMOTE_URL"
MAX_STREAM_BYTES = 4 << 20  # a completion of 4096 tokens as llama-server's chunks is ~2 MB
MAX_STREAM_S = 30.0  # a suggestion still streaming after 30 s holds the only worker too long


class RemoteSpecError(ValueError):
    """A `[backend]` table that does not parse; the message is fit for a user."""


class InsecureKeyError(RemoteSpecError):
    """An API key that would go over plain HTTP to another machine; it is not sent."""


@dataclass(frozen=True)
class RemoteSpec:
    kind: str  # llama-server | openai-compatible
    url: str
    model: str = ""
    api_key_env: str | None = None
    connect_timeout_s: float = 2.0
    read_timeout_s: float = 10.0
    verify_tls: bool = True
    fim: str = "none"  # the preset's FIM family (llama-server: /infill unless "none")
    slots: int = 0  # llama-server: documents spread over this many id_slots (0: any idle slot)
    metrics_interval_s: float = 5.0  # the least time between two /metrics polls (0: never)
    warmup: bool = True  # llama-server: prompt-only warm-ups for superseded requests
    max_stream_bytes: int = MAX_STREAM_BYTES  # one stream's bytes, beyond which it is an error
    max_stream_s: float = MAX_STREAM_S  # one stream's whole time, beyond which it is an error

    @property
    def base_url(self) -> str:
        return (os.environ.get(URL_ENV) or self.url).rstrip("/")

    @property
    def trust_env(self) -> bool:
        """Whether httpx may take a proxy (and CA files, .netrc) from the environment: not for a
        loopback engine, whose requests (key and code) would go to `HTTP_PROXY` in clear."""
        return not is_loopback(urlsplit(self.base_url).hostname or "")

    def client_options(self) -> dict[str, Any]:
        """What every httpx client and request to this engine is given."""
        return {"verify": self.verify_tls, "trust_env": self.trust_env}

    def headers(self) -> dict[str, str]:
        """Request headers; the API key from its environment variable, when one is named.
        Raises `InsecureKeyError` rather than put a key on plain HTTP to another machine."""
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if not key:
            return {}
        url = urlsplit(self.base_url)
        if url.scheme != "https" and not is_loopback(url.hostname or ""):
            raise InsecureKeyError(
                f"the API key (${self.api_key_env}) is not sent to {url.hostname} over plain "
                "http: anyone on the way could read it. Use an https:// url (TLS in front of "
                "the engine), or a loopback address (e.g. an SSH tunnel to 127.0.0.1)"
            )
        return {"Authorization": f"Bearer {key}"}


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or the name localhost: a connection that never leaves this machine."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.lower() in ("localhost", "localhost.")


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
            fim=fim,
            slots=_count(table.get("slots", 0), "slots"),
            metrics_interval_s=float(table.get("metrics_interval_s", 5.0)),
            warmup=_flag(table.get("warmup", True), "warmup"),
            max_stream_bytes=_positive(table, "max_stream_bytes", MAX_STREAM_BYTES),
            max_stream_s=_positive(table, "max_stream_s", MAX_STREAM_S),
        )
    except (TypeError, ValueError) as exc:
        raise RemoteSpecError(f"preset {preset!r}: [backend]: {exc}") from exc


def _count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a whole number >= 0")
    return value


def _positive(table: dict[str, Any], name: str, default: int | float) -> Any:
    """`table[name]`, a number > 0 (a whole one where the default is)."""
    value, kind = table.get(name, default), type(default)
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value > 0
    if not ok or (kind is int and not isinstance(value, int)):
        what = "a whole number" if kind is int else "a number"
        raise ValueError(f"{name} must be {what} > 0, got {value!r}")
    return kind(value)


def _flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false")
    return value


def _optional_str(value: object) -> str | None:
    return None if value is None else str(value)
