"""The server's options: one dataclass with defaults, camelCase on the wire.

This module owns parsing and validating the client's configuration (initializationOptions and
`workspace/didChangeConfiguration`). It knows nothing of LSP transport: an invalid value becomes a
warning string, and the caller shows it once and keeps the field's default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

DEVICES = ("auto", "cpu", "cuda")
SPECULATION = ("auto", "ngram", "draft", "both", "off")
# Options whose change needs the models reloaded.
MODEL_FIELDS = ("preset", "device", "trust_remote_code")


@dataclass(frozen=True)
class Options:
    preset: str = "coder"  # the real code pair (models/coder.toml); "bundled" runs without a fetch
    device: str = "auto"
    max_tokens: int = 64
    debounce_ms: int = 0  # 0: adaptive
    enabled_languages: tuple[str, ...] = ("*",)
    temperature: float = 0.0
    enabled: bool = True
    speculation: str = "auto"
    kv_reuse: bool = True
    trust_remote_code: bool = False
    prefetch: bool = True  # after a suggestion, compute the one its accept would ask for
    # An automatic request still generating after this many ms is answered with the complete lines
    # streamed so far (trimmed as usual); the generation goes on, and what it adds answers the
    # request after the accept. 0: always wait for the whole suggestion.
    partial_ms: int = 100

    def language_enabled(self, language_id: str) -> bool:
        return "*" in self.enabled_languages or language_id in self.enabled_languages

    def model_key(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in MODEL_FIELDS)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# field name -> (check, converter); a value failing its check keeps the current value.
_VALIDATORS: dict[str, tuple[Callable[[Any], bool], Callable[[Any], Any]]] = {
    "preset": (lambda v: isinstance(v, str) and bool(v.strip()), str.strip),
    "device": (lambda v: v in DEVICES, str),
    "max_tokens": (lambda v: _is_int(v) and 1 <= v <= 4096, int),
    "debounce_ms": (lambda v: _is_int(v) and 0 <= v <= 10_000, int),
    "enabled_languages": (
        lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
        tuple,
    ),
    "temperature": (
        lambda v: (_is_int(v) or isinstance(v, float)) and 0 <= v <= 10,
        float,
    ),
    "enabled": (lambda v: isinstance(v, bool), bool),
    "speculation": (lambda v: v in SPECULATION, str),
    "kv_reuse": (lambda v: isinstance(v, bool), bool),
    "trust_remote_code": (lambda v: isinstance(v, bool), bool),
    "prefetch": (lambda v: isinstance(v, bool), bool),
    "partial_ms": (lambda v: _is_int(v) and 0 <= v <= 60_000, int),
}


def settings_section(settings: object) -> Mapping[str, Any] | None:
    """The spec-lsp object inside `didChangeConfiguration` settings (nested or direct)."""
    if not isinstance(settings, Mapping):
        return None
    nested = settings.get("specLsp")
    if isinstance(nested, Mapping):
        return nested
    nested = settings.get("spec-lsp")
    if isinstance(nested, Mapping):
        return nested
    return settings


def merge(base: Options, wire: object) -> tuple[Options, list[str]]:
    """`base` with the camelCase keys of `wire` applied; returns warnings for invalid values.

    An invalid value falls back to the field's default (not the previous value), as the protocol
    says; unknown keys are ignored so that newer clients keep working with older servers.
    """
    if wire is None:
        return base, []
    if not isinstance(wire, Mapping):
        return base, [f"spec-lsp: configuration must be an object, got {type(wire).__name__}"]
    defaults = Options()
    changes: dict[str, Any] = {}
    warnings: list[str] = []
    for f in dataclasses.fields(Options):
        key = camel(f.name)
        if key not in wire:
            continue
        value = wire[key]
        check, convert = _VALIDATORS[f.name]
        if check(value):
            changes[f.name] = convert(value)
        else:
            default = getattr(defaults, f.name)
            warnings.append(
                f"spec-lsp: invalid value {value!r} for {key!r}; using the default {default!r}"
            )
            changes[f.name] = default
    return dataclasses.replace(base, **changes), warnings


def to_wire(options: Options) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(Options):
        value = getattr(options, f.name)
        out[camel(f.name)] = list(value) if isinstance(value, tuple) else value
    return out


__all__ = ["Options", "merge", "settings_section", "to_wire"]
