"""`spec-lsp bench verify-cost`: what a target pass over n new tokens costs against one token.

A verification pass over k drafted tokens runs the target over k + 1 rows; speculation pays only
as far as those extra rows are cheap. This command loads a preset's target as the server runs it
(its forward and kernels: `SPEC_LSP_KERNELS=avx2` and the like force a narrower kernel family) and
times `timing.pass_costs` after a cached context of each given length: the best of `reps` runs for
n = 1 .. `rows`, printed as milliseconds and as a ratio to one row, with the CPU and the kernels.
`cpu_time`: one thread, each pass timed by its thread's CPU time, so that another process on a
busy machine barely moves the curve (the wall time of 2 threads waits on the scheduler).
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), or the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def curve_table(curves: dict[int, tuple[float, ...]]) -> list[str]:
    """Markdown rows: the ratio to one row per context length, then one row's milliseconds."""
    rows = len(next(iter(curves.values())))
    lines = [
        "| rows | " + " | ".join(str(n) for n in range(1, rows + 1)) + " | 1 row ms |",
        "| --- " * (rows + 2) + "|",
    ]
    for context, ms in curves.items():
        ratios = " | ".join(f"{m / ms[0]:.2f}" for m in ms)
        lines.append(f"| after {context} tokens | {ratios} | {ms[0]:.1f} |")
    return lines


def main(
    preset: str,
    device: str,
    rows: int,
    contexts: list[int],
    reps: int,
    json_path: str | None,
    random_weights: bool = False,
    cpu_time: bool = False,
) -> int:
    import torch

    from spec_lsp.engine.timing import pass_costs
    from spec_lsp.presets import load_preset_engine

    threads = torch.get_num_threads()
    if cpu_time:
        torch.set_num_threads(1)
    try:
        engine = load_preset_engine(preset, device=device, random_weights=random_weights)
        clock = time.thread_time if cpu_time else time.perf_counter
        target = engine.forwards.target
        curves = {c: pass_costs(target, rows, context=c, reps=reps, clock=clock) for c in contexts}
    finally:
        torch.set_num_threads(threads)
    report: dict[str, Any] = {
        "preset": preset,
        "cpu": cpu_name(),
        "kernels": engine.kernels,
        "forward": engine.forward,
        "reps": reps,
        "timing": "one thread, CPU time"
        if cpu_time
        else f"wall, {torch.get_num_threads()} threads",
        "ms": {str(c): [round(m, 2) for m in ms] for c, ms in curves.items()},
        "ratio": {str(c): [round(m / ms[0], 3) for m in ms] for c, ms in curves.items()},
    }
    print(
        f"{preset} target, kernels {engine.kernels}, {report['cpu']}, {report['timing']}, "
        f"best of {reps}"
    )
    print("\n".join(curve_table(curves)))
    if json_path:
        Path(json_path).write_text(json.dumps(report, indent=2) + "\n")
    return 0
