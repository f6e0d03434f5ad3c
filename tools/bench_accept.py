"""Accept -> next suggestion, with and without prefetch, on a real preset (in process, no LSP).

For each of N positions in a Python file (the end of the first half of a line inside it, the text
after the cursor removed, as if the user is writing there): ask for a suggestion, pause (until the
prefetch has finished, at most --pause-s), then either
- accept it whole and ask again: the accept -> next suggestion latency, or
- type the file's next character instead (not the accept) and ask again: a following real
  request's latency, which pays for the prefetch's KV (the prefetch's cost).
Both with `prefetch` on and off, in the same process and run, alternating.

    .venv/bin/python tools/bench_accept.py --preset bundled --file /usr/lib/python3.11/colorsys.py
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from spec_lsp.completion import CompletionService
from spec_lsp.config import Options
from spec_lsp.worker import InferenceWorker, engine_loader


def positions(text: str, n: int) -> list[tuple[str, str]]:
    """Document texts ending mid-line on indented code lines, spread over the file, and the
    character the file has next."""
    lines = text.split("\n")
    rows = [i for i, line in enumerate(lines) if line.startswith("    ") and len(line.strip()) > 12]
    step = max(1, len(rows) // n)
    out = []
    for row in rows[::step][:n]:
        line = lines[row]
        half = len(line) // 2
        out.append(("\n".join(lines[:row] + [line[:half]]), line[half]))
    return out


async def trial(
    service: CompletionService, uri: str, text: str, nxt: str, accept: bool, pause_s: float
) -> float | None:
    service.reuse.clear()  # each trial from a cold cache: nothing answered before
    service.prefetch.clear()
    service.did_open(uri, "python", 1, text)
    row, col = text.count("\n"), len(text.split("\n")[-1])
    first = await service.complete(uri, row, col, "utf-32")
    if first is None:
        service.did_close(uri)
        return None
    deadline = time.perf_counter() + pause_s
    while time.perf_counter() < deadline and service.prefetch.busy(uri):  # the user's pause
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.05)
    other = next(c for c in (nxt, " ", "x", "(") if not first.text.startswith(c))
    typed = first.text if accept else other  # the accept, or a key not typing through it
    service.did_change(uri, 2, [((row, col, row, col), typed)], "utf-32")
    new = text + typed
    t0 = time.perf_counter()
    await service.complete(uri, new.count("\n"), len(new.split("\n")[-1]), "utf-32")
    ms = (time.perf_counter() - t0) * 1000
    service.did_close(uri)
    return ms


def summary(values: list[float]) -> str:
    if not values:
        return "-"
    q = statistics.quantiles(values, n=10) if len(values) > 1 else [values[0]] * 9
    return f"p50 {statistics.median(values):.1f} ms, p90 {q[8]:.1f} ms (n={len(values)})"


async def main(args: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    worker = InferenceWorker(loop)
    options = Options(preset=args.preset, device=args.device)
    done = asyncio.Event()
    worker.load(args.preset, engine_loader(options), lambda m, f: None, done.set)
    await done.wait()
    service = CompletionService(worker, options)
    service.model_ready()
    texts = positions(open(args.file).read(), args.n)  # noqa: SIM115
    results: dict[tuple[bool, bool], list[float]] = {}
    for i, (text, nxt) in enumerate(texts):
        for prefetch in (True, False):
            service.set_options(Options(preset=args.preset, device=args.device, prefetch=prefetch))
            for accept in (True, False):
                uri = f"file:///bench/{i}-{prefetch}-{accept}.py"
                ms = await trial(service, uri, text, nxt, accept, args.pause_s)
                if ms is not None:
                    results.setdefault((prefetch, accept), []).append(ms)
                print(f"{i} prefetch={prefetch} accept={accept}: {ms} ms", flush=True)
    for prefetch in (True, False):
        label = "prefetch on " if prefetch else "prefetch off"
        print(f"{label}: accept -> next suggestion {summary(results.get((prefetch, True), []))}")
        print(f"{label}: other key -> suggestion  {summary(results.get((prefetch, False), []))}")
    print("stats:", service.stats.to_wire({})["prefetch"])
    worker.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="bundled")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--file", default="/usr/lib/python3.11/colorsys.py")
    parser.add_argument("-n", type=int, default=12)
    parser.add_argument("--pause-s", type=float, default=3.0)
    asyncio.run(main(parser.parse_args()))
