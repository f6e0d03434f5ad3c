"""The real llama-server for the e2e tests (marker `llama_server`; `-m "not llama_server"` skips).

The binary is the one tools/build_llama_server.sh builds into ~/.cache/spec-lsp-tools (kept
between runs; the first build takes about 7 minutes on 2 cores). When it is missing the fixture
builds it once; only if the build itself fails are the tests skipped, with the reason.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from spec_lsp.remote.launch import LlamaServer, find_llama_server

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 45 * 60


@pytest.fixture(scope="session")
def llama_server_binary() -> Path:
    binary = find_llama_server()
    if binary is None:
        script = ROOT / "tools" / "build_llama_server.sh"
        try:
            subprocess.run(
                ["bash", str(script)],
                cwd=ROOT,
                check=True,
                timeout=BUILD_TIMEOUT_S,
                capture_output=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            pytest.skip(f"llama-server could not be built with {script.name}: {exc}")
        binary = find_llama_server()
        if binary is None:
            pytest.skip(f"{script.name} ran but left no llama-server binary")
    return binary


@pytest.fixture(scope="module")
def llama_server(
    llama_server_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    from spec_lsp.engine.from_source import bundled_gguf

    log = tmp_path_factory.mktemp("llama") / "llama-server.log"
    server = LlamaServer(llama_server_binary, bundled_gguf("smollm2-135m-instruct"), log=log)
    server.start()
    yield server
    server.stop()
