"""llama.cpp's `llama-server` as a peer in `bench engine`: the same GGUF, prompts, thread count and
max tokens through its `/completion` endpoint (greedy, `cache_prompt` off), decode and prefill
figures from the `timings` it returns.

The binary comes from `make bench-peers` (tools/build_llama_server.sh, cached under
~/.cache/spec-lsp-tools) or `$SPEC_LSP_LLAMA_SERVER`; without one the rows are skipped.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spec_lsp.benchmarks.prompts import Prompt


def server_binary() -> Path | None:
    env = os.environ.get("SPEC_LSP_LLAMA_SERVER")
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    cached = Path(base) / "spec-lsp-tools" / "llama.cpp" / "build" / "bin" / "llama-server"
    for path in (Path(env) if env else None, cached):
        if path is not None and path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def supports(binary: Path, flag: str) -> bool:
    out = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60)
    return flag in out.stdout + out.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(url: str, body: dict[str, Any], timeout: float = 600) -> dict[str, Any]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return dict(json.loads(resp.read()))


@contextmanager
def running(binary: Path, gguf: Path, threads: int, extra: list[str]) -> Iterator[str]:
    """A llama-server on 127.0.0.1 for the duration of the block; yields its base URL."""
    port = _free_port()
    cmd = [str(binary), "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["-t", str(threads), "-tb", str(threads), "-c", "4096", "-np", "1", *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"llama-server exited: {(proc.stderr.read() if proc.stderr else '')[-800:]}"
                )
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("llama-server did not become healthy in 120 s")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@dataclass
class PeerResult:
    seconds: float = 0.0
    generated: int = 0
    decode_ms: float = 0.0
    prefill_ms: float = 0.0
    outputs: list[list[int]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        n = self.generated
        return {
            "tokens_per_s": round(n / self.seconds, 2) if self.seconds else 0.0,
            "decode_tokens_per_s": round(n / (self.decode_ms / 1000), 2) if self.decode_ms else 0.0,
            "generated_tokens": n,
            "seconds": round(self.seconds, 3),
            "prefill_ms": round(self.prefill_ms, 1),
            "target_forwards_per_token": None,
            "acceptance": None,
            "identical_to_target": None,  # another runtime's numerics: not comparable token-wise
        }


def run_peer(url: str, prompts: list[Prompt], max_new: int) -> PeerResult:
    result = PeerResult()
    warm = {"prompt": prompts[0].text, "n_predict": 4, "temperature": 0, "cache_prompt": False}
    _post(f"{url}/completion", warm)
    for p in prompts:
        body = {
            "prompt": p.text,
            "n_predict": max_new,
            "temperature": 0,
            "top_k": 1,
            "cache_prompt": False,
            "return_tokens": True,
        }
        t = time.perf_counter()
        out = _post(f"{url}/completion", body)
        result.seconds += time.perf_counter() - t
        timings = out.get("timings", {})
        result.generated += int(timings.get("predicted_n", 0))
        result.decode_ms += float(timings.get("predicted_ms", 0.0))
        result.prefill_ms += float(timings.get("prompt_ms", 0.0))
        result.outputs.append([int(i) for i in out.get("tokens", [])])
    return result


def pass_costs(
    url: str, text: str, sizes: tuple[int, ...] = (1, 8), reps: int = 3
) -> dict[str, float]:
    """llama-server's own cost of evaluating n new tokens after a cached context (its prompt
    processing: every layer over n tokens, the output layer for the last only, so a lower bound
    of a verification pass), best of `reps`, from its `timings`."""
    ids = [int(i) for i in _post(f"{url}/tokenize", {"content": text}).get("tokens", [])]
    base, extra = ids[:64], ids[64 : 64 + max(sizes)]
    if len(extra) < max(sizes):
        return {}
    costs: dict[str, float] = {}
    for n in sizes:
        best = float("inf")
        for _ in range(reps):
            warm = {"prompt": base, "n_predict": 1, "temperature": 0, "cache_prompt": True}
            _post(f"{url}/completion", warm)
            body = {**warm, "prompt": base + extra[:n]}
            timings = _post(f"{url}/completion", body).get("timings", {})
            if int(timings.get("prompt_n", -1)) != n:
                return {}  # the server did not reuse the cached context as asked
            best = min(best, float(timings.get("prompt_ms", 0.0)))
        costs[f"ms_{n}"] = round(best, 2)
    first, last = costs[f"ms_{sizes[0]}"], costs[f"ms_{sizes[-1]}"]
    costs["ratio"] = round(last / first, 2) if first else 0.0
    return costs


def peer_modes(
    gguf: Path, prompts: list[Prompt], max_new: int, threads: int, log: Any
) -> dict[str, Any]:
    """`llama_cpp` and `llama_cpp_ngram` rows, or none without a llama-server binary."""
    binary = server_binary()
    if binary is None:
        print("llama_cpp: skipped (no llama-server; `make bench-peers` builds one)", file=log)
        return {}
    modes: dict[str, Any] = {}
    variants: dict[str, list[str]] = {"llama_cpp": []}
    if supports(binary, "ngram-mod"):
        variants["llama_cpp_ngram"] = ["--spec-type", "ngram-mod"]
    for name, extra in variants.items():
        print(f"{name}...", file=log)
        try:
            with running(binary, gguf, threads, extra) as url:
                modes[name] = run_peer(url, prompts, max_new).summary()
                if not extra:
                    modes[name]["pass_cost"] = pass_costs(url, prompts[0].text)
        except (OSError, RuntimeError) as exc:
            print(f"{name}: failed ({exc})", file=log)
    return modes
