"""What the workspace and the client may choose, and what only the user may.

An editor starts the server in the workspace and passes the workspace's settings on; neither is
the user's own choice. So:

- `leave_workspace`: the serving process leaves its working directory for `/` and drops it from
  `sys.path` as it starts serving (its preset file made absolute first); nothing is then looked
  up there (and a hub id is never a workspace folder either way: `engine.origin`).
- `client_options`: a client's settings merged over the options in force, where a preset is a
  name (`PRESET_NAME`), never a path, and an invalid value of a field that reloads the models
  keeps the current one.
- `client_preset_refusal`: a client may switch to a *local* preset (its models on this machine, no
  remote engine) unless the user allowed more with `spec-lsp serve --allow-client-presets`:
  `remote` (a `[backend]` preset: prompts leave the machine) and `download` (a preset whose models
  are not here yet: gigabytes fetched). The preset the user started the server with is theirs and
  always allowed. `trustRemoteCode` is a server flag only (`config.Setting.flag`).

It knows nothing of LSP: the server turns a refusal into a warning and keeps its preset.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spec_lsp.config import MODEL_FIELDS, Options, camel, merge
from spec_lsp.engine.sources import origin
from spec_lsp.presets import Preset, PresetError, load_preset

KINDS = ("remote", "download")  # what `--allow-client-presets` may allow beyond local presets
ALLOW_FLAG = "--allow-client-presets"
NEUTRAL_DIR = os.path.abspath(os.sep)
# A preset a client names: a name (spec-lsp models list), never a path nor a .toml file.
PRESET_NAME = re.compile(r"(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]{0,99}(?<!\.toml)")

# Set once by `serve` from its command line (one user, one process).
_allowed: frozenset[str] = frozenset()
_user_preset = ""


def allow_client_presets(kinds: str | None, user_preset: str = "") -> None:
    """`remote,download` (either, both, or empty): what a client may switch to beyond local
    presets; `user_preset` (`serve --preset`) stays allowed whatever its kind, so a client may
    switch back to it. Raises ValueError for an unknown kind."""
    wanted = {k.strip() for k in (kinds or "").split(",") if k.strip()}
    if unknown := wanted - set(KINDS):
        raise ValueError(f"{ALLOW_FLAG}: unknown {', '.join(sorted(unknown))} (known: {KINDS})")
    global _allowed, _user_preset
    _allowed, _user_preset = frozenset(wanted), user_preset


def allowed_kinds() -> frozenset[str]:
    return _allowed


def preset_kinds(preset: Preset) -> set[str]:
    """What a preset does beyond running local models: "remote", "download", or nothing."""
    if preset.backend is not None:
        return {"remote"}
    sources = [preset.resolve(s) for s in (preset.target, preset.draft) if s]
    return set() if all(origin.on_this_machine(s) for s in sources) else {"download"}


def client_preset_refusal(name: str) -> str | None:
    """Why a client may not switch to preset `name`, or None when it may. A preset that does not
    load is let through: loading it fails with its own message and loads nothing."""
    if name == _user_preset:
        return None
    try:
        preset = load_preset(name)
    except PresetError:
        return None
    refused = preset_kinds(preset) - _allowed
    if not refused:
        return None
    why = (
        "it sends your code to a remote engine"
        if "remote" in refused
        else "its models are not on this machine and would be downloaded"
    )
    return (
        f"spec-lsp: preset {name!r} refused: {why}. A client may switch to local presets only, "
        f"unless the server is started with `spec-lsp serve {ALLOW_FLAG} "
        f"{','.join(sorted(refused))}` (or with `--preset {name}`)"
    )


def client_options(current: Options, settings: Any) -> tuple[Options, list[str]]:
    """`merge`, with three guards for the fields that reload the models: an invalid value keeps
    the current one (merge's fallback to the default would load another model); a preset from
    a client must be a preset name (spec-lsp models list, or tiny), never a path: a client can
    pick among the presets the user installed, not point the server at files; and only a local
    one, unless the user allowed remote or downloading presets (`client_preset_refusal`)."""
    options, warnings = merge(current, settings)
    wire = settings if isinstance(settings, Mapping) else {}
    for name in MODEL_FIELDS:  # an invalid value keeps the models loaded, not the default's
        key, kept = camel(name), getattr(current, name)
        if getattr(options, name) != kept and wire.get(key) != getattr(options, name):
            options = dataclasses.replace(options, **{name: kept})
            warnings = [w for w in warnings if f"for {key!r}" not in w]
            warnings.append(
                f"spec-lsp: invalid value {wire.get(key)!r} for {key!r}; keeping {kept!r}"
            )
    if options.preset != current.preset and not PRESET_NAME.fullmatch(options.preset):
        warnings.append(
            f"spec-lsp: preset {options.preset!r} refused: a client may name a preset "
            f"(spec-lsp models list), not a path; keeping {current.preset!r}"
        )
        options = dataclasses.replace(options, preset=current.preset)
    elif options.preset != current.preset and (refusal := client_preset_refusal(options.preset)):
        warnings.append(f"{refusal}; keeping {current.preset!r}")
        options = dataclasses.replace(options, preset=current.preset)
    return options, warnings


def leave_workspace(options: Options) -> Options:
    """Leaves the working directory (an editor's is the workspace) for `/`, and drops it from
    the import path (`python -m` puts it first), so no later import or file lookup reads it.
    Returns `options` with a preset file the command line named relative made absolute first."""
    here = os.getcwd()
    preset = options.preset
    if preset.endswith(".toml") or "/" in preset:
        options = dataclasses.replace(options, preset=str(Path(preset).expanduser().absolute()))
    sys.path[:] = [p for p in sys.path if p not in ("", ".", here)]
    os.chdir(NEUTRAL_DIR)
    return options
