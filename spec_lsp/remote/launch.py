"""Starting a local llama-server (the e2e tests and `spec-lsp bench remote` use it).

`find_llama_server()` looks where `tools/build_llama_server.sh` builds it
(~/.cache/spec-lsp-tools/llama.cpp/build/bin, or $SPEC_LSP_TOOLS) or for $SPEC_LSP_LLAMA_SERVER;
`LlamaServer` runs it on 127.0.0.1 on a free port and waits for `/health`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import httpx


def tools_dir() -> Path:
    return Path(os.environ.get("SPEC_LSP_TOOLS") or Path.home() / ".cache" / "spec-lsp-tools")


def find_llama_server() -> Path | None:
    """`$SPEC_LSP_LLAMA_SERVER`, else the build `make bench-peers` chose (native where it ran,
    linked as llama.cpp/llama-server), else the portable build."""
    explicit = os.environ.get("SPEC_LSP_LLAMA_SERVER")
    base = tools_dir() / "llama.cpp"
    paths = (
        [Path(explicit)] if explicit else [base / "llama-server", base / "build/bin/llama-server"]
    )
    return next((p for p in paths if p.is_file() and os.access(p, os.X_OK)), None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class LlamaServer:
    """One llama-server process on 127.0.0.1; `stop()` kills it, `start()` runs it again."""

    def __init__(
        self,
        binary: Path,
        model: Path,
        port: int | None = None,
        threads: int = 2,
        extra: tuple[str, ...] = (),
        log: Path | None = None,
    ) -> None:
        self.binary, self.model, self.threads, self.extra = binary, model, threads, extra
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        return [
            str(self.binary),
            *("-m", str(self.model), "--host", "127.0.0.1", "--port", str(self.port)),
            *("-t", str(self.threads), "-c", "2048", "-np", "1"),
            *self.extra,
        ]

    def start(self, timeout_s: float = 60.0) -> None:
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(self.command(), stdout=out, stderr=out)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.proc.returncode}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1.0, trust_env=False).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"llama-server did not answer /health within {timeout_s:g} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None
