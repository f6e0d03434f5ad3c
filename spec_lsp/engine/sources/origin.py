"""Where a model source loads from, told by its spelling alone, never by what the working
directory holds. Torch-free, so presets, the server's client checks and `models list` use it too.

A source is one of:
- a name with a scheme: `builtin:tiny-*` (made in memory), `bundled:<name>` (the wheel's GGUF,
  converted once into the cache), `gguf:<catalog name>` (fetched once, sha256-checked) or
  `gguf:<path>`;
- a path that says it is one (`explicit_path`): absolute, `~/...`, or `./`/`../` (a preset's are
  made absolute against its own file by `Preset.resolve`; only a command line's reach here
  relative, and the user typed them);
- anything else: a Hugging Face hub id (`Qwen/Qwen2.5-Coder-1.5B`), loaded from the hub or its
  cache only.

transformers' `from_pretrained(id)` takes a folder of that name in the working directory before
the hub, and an editor starts the server in the workspace: a repository that ships a folder
`Qwen/Qwen2.5-Coder-1.5B` would choose the weights, the tokenizer and, with trust-remote-code,
the Python that runs. So a hub id shadowed by such a path is refused (`check_hub_id`), and the
server leaves its working directory at start (`spec_lsp.trust.leave_workspace`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

SCHEMES = ("builtin:", "bundled:", "gguf:")
RELATIVE = ("./", "../", ".\\", "..\\")
# How transformers finds a model's weights: one file, or an index naming its shards.
WEIGHTS = (
    ("model.safetensors", "model.safetensors.index.json"),
    ("pytorch_model.bin", "pytorch_model.bin.index.json"),
)


class OriginError(ValueError):
    """A source that would load from somewhere its spelling does not say; fit for a user."""


def explicit_path(source: str) -> Path | None:
    """The path a source names when it says it is a path (absolute, `~`, `./`, `../`), else None
    (a scheme or a hub id). Relative ones are taken against the working directory: only a
    command line the user typed has them here."""
    if source.startswith(SCHEMES):
        return None
    if source.startswith("~"):
        return Path(source).expanduser()
    if os.path.isabs(source) or source.startswith(RELATIVE) or source in (".", ".."):
        return Path(source).absolute()
    return None


def is_hub_id(source: str) -> bool:
    """Neither a scheme, nor a path, nor a GGUF file: an id for the hub (or its cache)."""
    plain = not source.startswith(SCHEMES) and explicit_path(source) is None
    return plain and not source.lower().endswith(".gguf")


def check_hub_id(source: str) -> None:
    """Raises `OriginError` when a hub id names a path in the working directory, which
    transformers would load instead of the hub's files."""
    if is_hub_id(source) and os.path.lexists(source):
        raise OriginError(
            f"{source!r} is a hub model id, but {Path(source).absolute()} exists in the working "
            "directory and transformers would load that instead: it is not loaded. Run from "
            f"another directory for the hub's model, or write './{source}' (or an absolute path) "
            "in the preset to load that folder"
        )


def gguf_path(source: str) -> Path | None:
    """The file of a GGUF source given as a path (`gguf:<path>` or `<path>.gguf`), None for a
    catalog name; a relative path that does not say so (`model.gguf`) is an `OriginError`."""
    ref = source.removeprefix("gguf:")
    if source.startswith("gguf:") and "/" not in ref and not ref.endswith(".gguf"):
        return None  # a catalog name
    path = explicit_path(ref)
    if path is None:
        raise OriginError(
            f"the GGUF path {ref!r} is relative: write it absolute, or './{ref}' relative to the "
            "preset's file (a path is never looked up in the working directory)"
        )
    return path


def on_this_machine(source: str) -> bool:
    """Whether loading `source` needs nothing fetched: built-in, bundled, a path, a cached
    catalog GGUF, or a hub id whose config and weights are in the hub's cache (`in_hub_cache`).
    Never fetches, never raises."""
    if source.startswith(("builtin:", "bundled:")):
        return True
    if (path := explicit_path(source)) is not None:
        return path.exists()
    if source.startswith("gguf:") or source.lower().endswith(".gguf"):
        from spec_lsp.engine.sources import fetch

        return source.startswith("gguf:") and fetch.is_cached(source)  # `x.gguf`: not a path
    try:
        return in_hub_cache(source)
    except Exception:  # noqa: BLE001 - an id the cache cannot parse is not on this machine
        return False


def in_hub_cache(repo: str) -> bool:
    """Whether the hub's cache holds the model `repo`: its config and all its weights (one file,
    or every shard its index names). A download cut short leaves the config and no weights (or
    some shards): the load would fetch the rest."""
    from huggingface_hub import try_to_load_from_cache

    def cached(name: str) -> str | None:
        path = try_to_load_from_cache(repo, name)
        return path if isinstance(path, str) else None

    if cached("config.json") is None:
        return False
    for single, index in WEIGHTS:
        if cached(single) is not None:
            return True
        if (listed := cached(index)) is not None:
            shards = set(json.loads(Path(listed).read_text())["weight_map"].values())
            return bool(shards) and all(cached(shard) is not None for shard in shards)
    return False
