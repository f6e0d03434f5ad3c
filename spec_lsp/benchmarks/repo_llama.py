"""`bench repo`'s peer row: llama-server's `/infill` at the same holes, asked as llama.vscode asks.

The request is llama.vscode's: `input_prefix` the (up to) `PREFIX_LINES` lines above the
cursor's line, `prompt` the cursor's line up to the cursor, `input_suffix` the rest of that line
and the `SUFFIX_LINES` lines below, and `input_extra` its ring of chunks: here the first 64 lines
of each file the server's rows open at that hole (`repo_editor.ring_chunks`, oldest first; llama
-server's template puts them ahead of the file as repository files and cuts what its context
cannot hold). Greedy (`top_k` 1, temperature 0), `cache_prompt` off, `n_predict` the server rows'
`maxTokens`. The raw output is the answer, scored as the server's are.

The binary and the GGUF are found as for `bench fim` (`llama_cpp.server_binary`, `--gguf`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any
from urllib.error import HTTPError

from spec_lsp.benchmarks.repo_client import Asked
from spec_lsp.benchmarks.repo_editor import context_files, ring_chunks
from spec_lsp.benchmarks.repo_holes import RepoHole, read
from spec_lsp.benchmarks.repo_packages import PackageTree

PREFIX_LINES = 256  # llama.vscode's n_prefix
SUFFIX_LINES = 64  # and n_suffix
REQUEST_TIMEOUT_S = 3600.0  # a 4,000-token prompt took ~10 minutes on the busy 2-core machine


def infill_body(
    hole: RepoHole, texts: dict[str, str], files: list[str], n_predict: int
) -> dict[str, Any]:
    """The `/infill` request at `hole`, as llama.vscode builds it."""
    document = hole.document(texts[hole.path])
    line_start = document.rfind("\n", 0, hole.start) + 1
    above = document[:line_start].split("\n")[:-1][-PREFIX_LINES:]
    below = document[hole.start :].split("\n")[: SUFFIX_LINES + 1]
    return {
        "input_prefix": "".join(line + "\n" for line in above),
        "prompt": document[line_start : hole.start],
        "input_suffix": "\n".join(below),
        "input_extra": ring_chunks(files, texts),
        "n_predict": n_predict,
        "temperature": 0,
        "top_k": 1,
        "cache_prompt": False,
    }


def llama_rows(
    work: list[tuple[PackageTree, list[RepoHole]]],
    gguf: Path,
    threads: int,
    n_predict: int,
    open_files: int,
    done: Callable[[str, RepoHole, Asked], None],
    log: IO[str],
) -> list[Asked] | None:
    """The answers at every hole, packages in order; None without a binary or on failure."""
    from spec_lsp.benchmarks.llama_cpp import _post, running, server_binary

    binary = server_binary()
    if binary is None:
        print("llama-server: skipped (no binary; `make bench-peers` builds one)", file=log)
        return None
    answers: list[Asked] = []
    try:
        with running(binary, gguf, threads, []) as url:
            _post(f"{url}/infill", {"input_prefix": "def f(", "input_suffix": "", "n_predict": 2})
            for source, holes in work:
                texts = {p: read(source.root, p) for p in source.code}
                for hole in holes:
                    files = context_files(source, hole, open_files)
                    start = time.perf_counter()
                    body = infill_body(hole, texts, files, n_predict)
                    out = _post(f"{url}/infill", body, timeout=REQUEST_TIMEOUT_S)
                    ms = (time.perf_counter() - start) * 1000
                    answers.append(Asked(str(out.get("content", "")), ms))
                    done("llama_server_ring", hole, answers[-1])
    except (OSError, RuntimeError) as exc:
        said = exc.read().decode(errors="replace")[:300] if isinstance(exc, HTTPError) else ""
        print(f"llama-server: failed ({exc} {said}); its row is left out", file=log)
        return None
    return answers
