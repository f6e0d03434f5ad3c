"""The server's options: one table of settings, the dataclass built from it, camelCase on the wire.

`SETTINGS` is the single source of truth for every option: its default, type or range, and a
one-line doc. Validation comes from it, and so do VS Code's manifest settings, the extension's
server keys, the Neovim help's option list and docs/protocol.md's table (tools/gen_settings.py
writes them; tests/test_settings_drift.py fails when one drifts).

This module owns parsing and validating the client's configuration (initializationOptions and
`workspace/didChangeConfiguration`). It knows nothing of LSP transport: an invalid value becomes a
warning string, and the caller shows it once and keeps the field's default.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spec_lsp.engine.api import SPECULATION

DEVICES = ("auto", "cpu", "cuda")
# Options whose change needs the models reloaded.
MODEL_FIELDS = ("preset", "device", "trust_remote_code")


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


@dataclass(frozen=True)
class Setting:
    """One option: a field of `Options` (camelCase on the wire), its default, its type and range
    (from the default's type, `choices`, `minimum`/`maximum`) and one line of doc."""

    name: str
    default: Any
    doc: str
    choices: tuple[str, ...] = ()
    minimum: int | float | None = None
    maximum: int | float | None = None
    flag: str = ""  # set by this `spec-lsp serve` flag only, never by a client

    @property
    def key(self) -> str:
        return camel(self.name)

    @property
    def client(self) -> bool:
        """Whether a client may set it (initializationOptions, didChangeConfiguration)."""
        return not self.flag

    @property
    def json_type(self) -> str:
        """The JSON schema type: boolean, integer, number, string or array (of strings)."""
        kinds = {bool: "boolean", int: "integer", float: "number", str: "string", tuple: "array"}
        return kinds[type(self.default)]

    def check(self, value: object) -> bool:
        if self.json_type == "array":
            return isinstance(value, list) and all(isinstance(x, str) for x in value)
        if self.json_type == "boolean":
            return isinstance(value, bool)
        if self.json_type == "string":
            text_ok = isinstance(value, str) and bool(value.strip())
            return text_ok and (not self.choices or value in self.choices)
        number_ok = _is_int(value) or (self.json_type == "number" and isinstance(value, float))
        if not number_ok:
            return False
        assert isinstance(value, int | float)
        low_ok = self.minimum is None or value >= self.minimum
        return low_ok and (self.maximum is None or value <= self.maximum)

    def convert(self, value: Any) -> Any:
        """A checked wire value as the field's type."""
        converters: dict[str, Any] = {"array": tuple, "number": float, "string": str.strip}
        return converters.get(self.json_type, lambda v: v)(value)

    def type_text(self) -> str:
        """The type and range as the docs write it, e.g. `"auto"|"cpu"|"cuda"` or `int 1-4096`."""
        if self.choices:
            return "|".join(f'"{c}"' for c in self.choices)
        names = {"boolean": "bool", "integer": "int", "number": "float", "array": "list of strings"}
        text = names.get(self.json_type, self.json_type)
        if self.minimum is not None and self.maximum is not None:
            return f"{text} {self.minimum:g}-{self.maximum:g}"
        return f"{text} >= {self.minimum:g}" if self.minimum is not None else text

    def default_text(self) -> str:
        """The default as JSON, e.g. `"coder"`, `64`, `["*"]`, `true`."""
        value = self.default
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, tuple):
            return "[" + ", ".join(f'"{v}"' for v in value) + "]"
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return f'"{value}"' if isinstance(value, str) else str(value)


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "preset",
        "coder",
        "model pair: a preset name from `spec-lsp models list`, or `tiny` (a random-weight test "
        "pair); when a client sends it, it overrides `spec-lsp serve --preset` (VS Code sends "
        "it only if you set it); a client names a preset, never a path",
    ),
    Setting("device", "auto", "where the models live", choices=DEVICES),
    Setting(
        "max_tokens",
        64,
        "most tokens one suggestion generates (a whole block: `blockTokens`; a preset sets no "
        "cap of its own)",
        minimum=1,
        maximum=4096,
    ),
    Setting(
        "block_tokens",
        256,
        "most tokens a whole block generates: for an explicit request, or on a blank line whose "
        "block has nothing written below it, the suggestion runs to the block's end (where the "
        "suffix's first line is indented less, or is written again) with this cap (`maxTokens` "
        "where that is more); 0: off, `maxTokens` everywhere",
        minimum=0,
        maximum=4096,
    ),
    Setting(
        "debounce_ms",
        0,
        "server-side debounce in ms; 0: none for the local engine (it stops a superseded "
        "generation within one step and keeps its KV), adapted to the model's latency for a "
        "remote engine",
        minimum=0,
        maximum=10_000,
    ),
    Setting(
        "enabled_languages",
        ("*",),
        'language ids that get suggestions; `"*"` for all, `"!id"` leaves one out '
        '(e.g. `["*", "!markdown"]`)',
    ),
    Setting("temperature", 0.0, "sampling temperature; 0 is greedy", minimum=0, maximum=10),
    Setting("enabled", True, "make suggestions; false: every request answers empty"),
    Setting(
        "speculation",
        "auto",
        "drafting method; `auto` takes the preset's `method`, any other value overrides it",
        choices=SPECULATION,
    ),
    Setting("kv_reuse", True, "reuse the KV cache across keystrokes"),
    Setting(
        "trust_remote_code",
        False,
        "let transformers run the Python code shipped with a model (only for models you trust)",
        flag="--trust-remote-code",
    ),
    Setting(
        "prefetch",
        True,
        "after a shown suggestion, compute on idle engine time the one its accept will ask for "
        "(greedy only)",
    ),
    Setting(
        "partial_ms",
        100,
        "an automatic request still generating after this many ms is answered with the complete "
        "lines streamed so far, and the rest answers the request after the accept; 0: always "
        "wait for the whole suggestion",
        minimum=0,
        maximum=60_000,
    ),
    Setting(
        "short_window",
        256,
        "while a file's prompt window has no KV yet (just opened, or the cursor far from where "
        "it was), requests are answered over a short window before the cursor (no other files): "
        "what the engine prefills in ~1.5 s as measured (128 tokens until measured), 96 tokens "
        "at least and this many at most; it keeps its start while lines are typed below it (its "
        "KV reused) until the full window, filled on idle time, takes over; 0: always wait for "
        "the full window (local engine only)",
        minimum=0,
        maximum=4096,
    ),
    Setting(
        "next_edit",
        True,
        "answer `textDocument/copilotInlineEdit`: predict the next edit near the cursor from the "
        "document's recent edits (the old text drafts the rewrite); false: every next-edit "
        "request answers no edit",
    ),
    Setting(
        "exclude",
        (),
        "glob patterns of files that get no suggestions, matched against the document's path "
        "(a pattern without `/` against its file name; `*` also crosses `/`), e.g. "
        '`["*.md", "*/secrets/*"]`',
    ),
    Setting(
        "private_files",
        (),
        "more glob patterns (as `exclude`) of files whose text never leaves them: no suggestions "
        "in them, never other files' context; added to the built-in list (`.env*`, `*.pem`, "
        "`*.key`, `id_rsa*`, `.netrc`, `credentials*`, `*secret*`..., docs/security.md)",
    ),
    Setting(
        "cross_file",
        True,
        "other files' chunks in completion prompts: a ring of blocks of recently opened or edited "
        "files, chosen as you pause (never a private file's); false: none",
    ),
    Setting(
        "definitions",
        True,
        "definitions of the names near the cursor (the call being written, the receiver's type, "
        "names used in the enclosing function) from an index of the workspace's files, as "
        "signatures with their docstrings' first lines, in completion prompts (never a private "
        "or git-ignored file's); false: none, and no index",
    ),
    Setting(
        "edit_context",
        True,
        "the recent edits of the files you edit (as diffs) in completion prompts (never a "
        "private file's); false: none",
    ),
)
SETTING: dict[str, Setting] = {s.name: s for s in SETTINGS}
_D: dict[str, Any] = {s.name: s.default for s in SETTINGS}


@dataclass(frozen=True)
class Options:
    """The options in force; each field's default comes from its `Setting` in `SETTINGS`."""

    preset: str = _D["preset"]  # "coder": the real code pair; "bundled" runs without a fetch
    device: str = _D["device"]
    max_tokens: int = _D["max_tokens"]
    block_tokens: int = _D["block_tokens"]  # 0: the whole-block rule is off
    debounce_ms: int = _D["debounce_ms"]  # 0: adaptive
    enabled_languages: tuple[str, ...] = _D["enabled_languages"]
    temperature: float = _D["temperature"]
    enabled: bool = _D["enabled"]
    speculation: str = _D["speculation"]
    kv_reuse: bool = _D["kv_reuse"]
    trust_remote_code: bool = _D["trust_remote_code"]
    prefetch: bool = _D["prefetch"]
    partial_ms: int = _D["partial_ms"]
    short_window: int = _D["short_window"]  # tokens; 0: off
    next_edit: bool = _D["next_edit"]
    exclude: tuple[str, ...] = _D["exclude"]
    private_files: tuple[str, ...] = _D["private_files"]
    cross_file: bool = _D["cross_file"]
    definitions: bool = _D["definitions"]
    edit_context: bool = _D["edit_context"]

    def language_enabled(self, language_id: str) -> bool:
        langs = self.enabled_languages
        if f"!{language_id}" in langs:
            return False
        return "*" in langs or language_id in langs

    def excluded(self, path: str) -> bool:
        """Whether `path` (a file path, `/`-separated) matches one of the `exclude` patterns."""
        name = path.rsplit("/", 1)[-1]
        return any(
            fnmatch.fnmatchcase(path if "/" in pattern else name, pattern)
            for pattern in self.exclude
        )

    def model_key(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in MODEL_FIELDS)


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
    says; unknown keys are ignored so that newer clients keep working with older servers. A
    setting that is not a client's to set (`trustRemoteCode`) is ignored with a warning.
    """
    if wire is None:
        return base, []
    if not isinstance(wire, Mapping):
        return base, [f"spec-lsp: configuration must be an object, got {type(wire).__name__}"]
    changes: dict[str, Any] = {}
    warnings: list[str] = []
    for setting in SETTINGS:
        key = setting.key
        if key not in wire:
            continue
        value = wire[key]
        if setting.flag:
            warnings.append(
                f"spec-lsp: {key!r} is ignored: a client cannot set it; start the server with "
                f"`spec-lsp serve {setting.flag}` instead"
            )
        elif setting.check(value):
            changes[setting.name] = setting.convert(value)
        else:
            warnings.append(
                f"spec-lsp: invalid value {value!r} for {key!r}; using the default "
                f"{setting.default!r}"
            )
            changes[setting.name] = setting.default
    return dataclasses.replace(base, **changes), warnings


def to_wire(options: Options) -> dict[str, Any]:
    """The options a client may send, camelCase, as JSON values."""
    out: dict[str, Any] = {}
    for setting in SETTINGS:
        if setting.client:
            value = getattr(options, setting.name)
            out[setting.key] = list(value) if isinstance(value, tuple) else value
    return out


__all__ = ["SETTINGS", "Options", "Setting", "merge", "settings_section", "to_wire"]
