"""llama.cpp's `llama-server` as a peer in `bench engine`: the same GGUF, prompts, thread count and
max tokens through its `/completion` endpoint (greedy, `cache_prompt` off), decode and prefill
figures and speculation counters from the `timings` it returns.

The binary comes from `make bench-peers` (tools/build_llama_server.sh, cached under
~/.cache/spec-lsp-tools; `$SPEC_LSP_TOOLS` moves it) or `$SPEC_LSP_LLAMA_SERVER`. The script builds
a native build where one runs and the portable one otherwise, links the one that passed its smoke
test as `llama.cpp/llama-server` and says which in `llama-server.build` beside the link;
`server_build()` reads that line back. Which rows the bench runs is `benchmarks.peers`' business.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from spec_lsp.benchmarks.prompts import BenchPrompt

SMOKE_PROMPT = "def add(a, b):\n"


def llama_cache() -> Path:
    """Where tools/build_llama_server.sh keeps llama.cpp (the same default as the script)."""
    tools = os.environ.get("SPEC_LSP_TOOLS") or str(Path.home() / ".cache" / "spec-lsp-tools")
    return Path(tools) / "llama.cpp"


def server_binary() -> Path | None:
    """`$SPEC_LSP_LLAMA_SERVER`, else the build the script linked as the one that ran, else the
    portable build of a cache from before the script chose (build/bin)."""
    env = os.environ.get("SPEC_LSP_LLAMA_SERVER")
    cache = llama_cache()
    for path in (
        Path(env) if env else None,
        cache / "llama-server",
        cache / "build" / "bin" / "llama-server",
    ):
        if path is not None and path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def server_build(binary: Path) -> str:
    """Which build `binary` is: the line the script wrote beside it (`llama-server.build`)."""
    record = binary.with_name(binary.name + ".build")
    if record.is_file():
        return record.read_text(encoding="utf-8").strip() or "unknown build"
    if binary.parent.name == "bin" and binary.parent.parent.name == "build":
        return "portable AVX2 build (recorded before the script chose between builds)"
    return "unknown build (from $SPEC_LSP_LLAMA_SERVER)"


@lru_cache(maxsize=8)
def _help(binary: Path) -> str:
    out = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60)
    return out.stdout + out.stderr


def supports(binary: Path, flag: str) -> bool:
    """`flag` appears in the binary's `--help` (an option, or a value such as a --spec-type)."""
    return flag in _help(binary)


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


def exit_reason(returncode: int) -> str:
    """`killed by SIGILL` for a crash on an instruction this CPU lacks, else the exit status."""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def _tail(log: Any) -> str:
    log.seek(0)
    return str(log.read().decode(errors="replace"))[-800:].strip()


@contextmanager
def running(
    binary: Path, gguf: Path, threads: int, extra: list[str], start_timeout: float = 120
) -> Iterator[str]:
    """A llama-server on 127.0.0.1 for the duration of the block; yields its base URL. A server
    that dies (at start or mid-request) raises RuntimeError: its exit reason on the first line,
    then the tail of its log."""
    port = _free_port()
    cmd = [str(binary), "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["-t", str(threads), "-tb", str(threads), "-c", "4096", "-np", "1", *extra]
    # Its log goes to a file: a pipe nobody reads would fill and stall the server.
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + start_timeout
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"llama-server exited ({exit_reason(proc.returncode)})\n{_tail(log)}"
                    )
                try:
                    with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                        if resp.status == 200:
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"llama-server did not become healthy in {start_timeout} s")
                time.sleep(0.5)
            yield url
        except OSError as exc:
            time.sleep(0.2)  # a crashed server's connection closes before its exit is reaped
            if proc.poll() is None:
                raise
            raise RuntimeError(
                f"llama-server died ({exit_reason(proc.returncode)})\n{_tail(log)}"
            ) from exc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def smoke_test(binary: Path, gguf: Path, timeout: float = 90) -> int:
    """A few greedy tokens from `binary` on a small GGUF; the count, or RuntimeError when it
    cannot (a build for instructions this CPU lacks dies here with SIGILL)."""
    with running(binary, gguf, 2, [], start_timeout=timeout) as url:
        body = {"prompt": SMOKE_PROMPT, "n_predict": 8, "temperature": 0, "top_k": 1}
        out = _post(f"{url}/completion", body, timeout=timeout)
    n = int((out.get("timings") or {}).get("predicted_n", 0))
    if n <= 0:
        raise RuntimeError(f"no tokens generated: {json.dumps(out)[:300]}")
    return n


@dataclass(frozen=True)
class Timings:
    """One `/completion` response's `timings`; the draft counters are None where the server sent
    none (no speculation configured, or a build that does not report them)."""

    prompt_n: int
    prompt_ms: float
    predicted_n: int
    predicted_ms: float
    draft_n: int | None
    draft_accepted: int | None

    @classmethod
    def of(cls, response: dict[str, Any]) -> Timings:
        t = response.get("timings") or {}
        drafted = t.get("draft_n", t.get("n_draft"))
        accepted = t.get("draft_n_accepted", t.get("n_draft_accepted"))
        return cls(
            prompt_n=int(t.get("prompt_n", 0)),
            prompt_ms=float(t.get("prompt_ms", 0.0)),
            predicted_n=int(t.get("predicted_n", 0)),
            predicted_ms=float(t.get("predicted_ms", 0.0)),
            draft_n=None if drafted is None else int(drafted),
            draft_accepted=None if accepted is None else int(accepted),
        )


def _rate(tokens: int, ms: float) -> float:
    return round(tokens / (ms / 1000), 2) if ms else 0.0


@dataclass
class PeerResult:
    speculative: bool = False  # drafted/accepted are reported (0 when the server drafted none)
    seconds: float = 0.0
    generated: int = 0
    decode_ms: float = 0.0
    prompt_tokens: int = 0
    prefill_ms: float = 0.0
    drafted: int = 0
    accepted: int = 0
    outputs: list[list[int]] = field(default_factory=list)

    def add(self, t: Timings) -> None:
        self.generated += t.predicted_n
        self.decode_ms += t.predicted_ms
        self.prompt_tokens += t.prompt_n
        self.prefill_ms += t.prompt_ms
        self.drafted += t.draft_n or 0
        self.accepted += t.draft_accepted or 0

    def summary(self) -> dict[str, Any]:
        n, spec = self.generated, self.speculative
        return {
            "tokens_per_s": round(n / self.seconds, 2) if self.seconds else 0.0,
            "decode_tokens_per_s": _rate(n, self.decode_ms),
            "prefill_tokens_per_s": _rate(self.prompt_tokens, self.prefill_ms),
            "generated_tokens": n,
            "prompt_tokens": self.prompt_tokens,
            "seconds": round(self.seconds, 3),
            "prefill_ms": round(self.prefill_ms, 1),
            "drafted_tokens": self.drafted if spec else None,
            "accepted_tokens": self.accepted if spec else None,
            "target_forwards_per_token": None,
            "acceptance": round(self.accepted / self.drafted, 3) if spec and self.drafted else None,
            "identical_to_target": None,  # another runtime's numerics: not comparable token-wise
        }


def run_peer(
    url: str, prompts: list[BenchPrompt], max_new: int, speculative: bool = False
) -> PeerResult:
    result = PeerResult(speculative=speculative)
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
        result.add(Timings.of(out))
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
