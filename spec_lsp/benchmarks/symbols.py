"""`python -m spec_lsp.benchmarks.symbols PATH`: the workspace symbol index on a folder: build
time, resident memory it added, and the time to index one file again after an edit.

Prints a table and JSON. The build runs as the server's does (`SymbolIndex.build`, one thread);
the update re-tags the largest indexed file with one line appended, as a pause after typing in
it does (`SymbolIndex.update` with the open document's tree kept: parsed incrementally;
`--whole`: parsed whole, as a file changed on disk), the median of `--updates` runs. Times are
wall-clock and CPU (`time.thread_time`) of this thread; memory is the RSS growth of this process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from spec_lsp.symbols import SymbolIndex


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(path: str, updates: int, incremental: bool = True) -> dict[str, float]:
    root = os.path.abspath(path)
    before = rss_mb()
    index = SymbolIndex()
    index.roots = (root,)
    wall, cpu = time.perf_counter(), time.thread_time()
    report = index.build([root], budget_s=600)
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    grown = rss_mb() - before
    files = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]
    indexed = [f for f in files if index.has(f)]
    lines = 0
    for f in indexed:
        with open(f, encoding="utf-8", errors="replace") as fh:
            lines += sum(1 for _ in fh)
    largest = max(indexed, key=os.path.getsize)
    with open(largest, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    if incremental:  # the open document's tree, kept from its first version
        index.update(largest, text, keep_tree=True)
    times, cpu_times = [], []
    for i in range(updates):
        start, cpu_start = time.perf_counter(), time.thread_time()
        index.update(largest, text + f"\nedited_{i} = {i}\n", keep_tree=incremental)
        times.append((time.perf_counter() - start) * 1000)
        cpu_times.append((time.thread_time() - cpu_start) * 1000)
    return {
        "files": report.files,
        "lines": lines,
        "tags": report.tags,
        "buildS": round(wall, 2),
        "buildCpuS": round(cpu, 2),
        "rssGrowthMB": round(grown, 1),
        "updateMsP50": round(statistics.median(times), 1),
        "updateMsMax": round(max(times), 1),
        "updateCpuMsP50": round(statistics.median(cpu_times), 1),
        "largestFileLines": text.count("\n") + 1,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", help="the folder to index (a workspace root)")
    parser.add_argument("--updates", type=int, default=20, help="updates timed (default 20)")
    parser.add_argument(
        "--whole", action="store_true", help="parse each update whole (no kept tree, as from disk)"
    )
    args = parser.parse_args(argv)
    figures = measure(args.path, args.updates, incremental=not args.whole)
    for key, value in figures.items():
        print(f"{key:>18}  {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
