"""The replay report: a text table, the JSON document, and the latency plot (matplotlib, Agg: the
optional `plot` extra, ~95 MB with its stack, so only `replay --plot` needs it)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from spec_lsp.replay.analysis import SOON_MS, Tally

ROWS: tuple[tuple[str, str], ...] = (
    ("requests", "requests"),
    ("answered", "answered"),
    ("cancelled", "cancelled"),
    ("empty", "empty"),
    ("shown", "shown"),
    ("stale_shown", "stale shown"),
    ("latency_ms.p50", "latency p50 ms"),
    ("latency_ms.p90", "latency p90 ms"),
    ("latency_ms.p99", "latency p99 ms"),
    ("latency_ms.max", "latency max ms"),
    ("pauses", "pauses (>= {pause} ms)"),
    ("pauses_with_suggestion", "pauses with a suggestion"),
    ("pauses_answered_soon", f"pauses with one within {SOON_MS:.0f} ms"),
    ("pauses_missed.late", "pauses missed: answer too late"),
    ("pauses_missed.empty", "pauses missed: nothing to add"),
    ("pauses_missed.stale", "pauses missed: answer stale"),
    ("pauses_missed.no request", "pauses missed: no request"),
    ("pause_to_suggestion_ms.p50", "pause->suggestion p50 ms"),
    ("pause_to_suggestion_ms.p90", "pause->suggestion p90 ms"),
    ("pause_to_suggestion_ms.p99", "pause->suggestion p99 ms"),
    ("predicted_chars", "predicted chars"),
    ("accepts", "accepts"),
    ("accepts_with_suggestion", "accepts with a next suggestion"),
    ("accepts_answered_empty", "accepts answered: nothing to add"),
    ("accepts_superseded", "accepts superseded by a key"),
    ("accept_to_suggestion_ms.p50", "accept->suggestion p50 ms"),
    ("accept_to_suggestion_ms.p90", "accept->suggestion p90 ms"),
    ("accept_to_answer_ms.p50", "accept->answer p50 ms"),
    ("accept_to_answer_ms.p90", "accept->answer p90 ms"),
    ("prefetch_hits", "prefetch hits"),
    ("typed_chars", "typed chars"),
    ("decode_tokens_per_s", "requests' decode tok/s (server)"),
    ("draft_acceptance", "draft acceptance (server)"),
    ("next_edits_asked", "next edits asked (--next-edit-ms)"),
    ("next_edits_answered", "next edits answered with an edit"),
    ("next_edit_ms.p50", "next edit p50 ms"),
    ("next_edit_ms.p90", "next edit p90 ms"),
)
# Ratios shown with --compare: comparison / main, so a ratio above 1 means the main run is better
# for times, and worse for the one speed (the server's decode tok/s).
RATIO_KEYS = (
    "decode_tokens_per_s",
    "accept_to_suggestion_ms.p50",
    "accept_to_answer_ms.p50",
    "pause_to_suggestion_ms.p50",
    "pause_to_suggestion_ms.p90",
    "latency_ms.p50",
    "latency_ms.p90",
)


def lookup(figures: dict[str, Any], dotted: str) -> Any:
    value: Any = figures
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def ratio(numerator: Any, denominator: Any) -> float | None:
    if not isinstance(numerator, int | float) or not isinstance(denominator, int | float):
        return None
    return round(numerator / denominator, 2) if denominator > 0 else None


def ratios(main: dict[str, Any], other: dict[str, Any]) -> dict[str, float | None]:
    return {key: ratio(lookup(other, key), lookup(main, key)) for key in RATIO_KEYS}


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def table(runs: list[tuple[str, dict[str, Any]]], pause_ms: float) -> str:
    """Metrics as rows, runs as columns; with two runs, a third column of ratios."""
    header = ["metric"] + [label for label, _ in runs]
    if len(runs) == 2:
        header.append(f"{runs[1][0]}/{runs[0][0]}")
    rows = [header]
    for key, title in ROWS:
        row = [title.format(pause=int(pause_ms))] + [_cell(lookup(f, key)) for _, f in runs]
        if len(runs) == 2:
            r = (
                ratio(lookup(runs[1][1], key), lookup(runs[0][1], key))
                if key in RATIO_KEYS
                else None
            )
            row.append(f"{r:.2f}x" if r is not None else "")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for n, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_json(path: str | Path, document: dict[str, Any]) -> None:
    Path(path).write_text(
        json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


COLORS = {"shown": "tab:green", "empty": "tab:gray", "cancelled": "tab:red", "stale": "tab:orange"}


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed; the message says how to add it."""


def plot_missing() -> str | None:
    """Why `--plot` cannot draw here (matplotlib, the `plot` extra, is not installed), or None."""
    if importlib.util.find_spec("matplotlib") is not None:
        return None
    return (
        "--plot needs matplotlib, which spec-lsp installs only as an extra: "
        "pip install 'spec-lsp[plot]' (in a checkout: .venv/bin/pip install -e '.[plot]')"
    )


def plot(path: str | Path, runs: list[tuple[str, Tally]], window_s: float = 20.0) -> None:
    """Latency CDFs of every run, and the timeline of the first run's session that showed most."""
    if why := plot_missing():
        raise PlotUnavailable(why)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (cdf, line) = plt.subplots(2, 1, figsize=(10, 8), height_ratios=(1.1, 1.0))
    for (label, tally), style in zip(runs, ("-", "--", ":"), strict=False):
        for values, name in (
            (tally.pause_waits, "pause->suggestion"),
            (tally.latencies, "request latency"),
        ):
            if values:
                xs = sorted(values)
                ys = [(i + 1) / len(xs) for i in range(len(xs))]
                cdf.step(xs, ys, where="post", linestyle=style, label=f"{label}: {name}")
    cdf.axvline(300, color="black", linewidth=0.6, alpha=0.4)
    cdf.set_xscale("symlog", linthresh=10)
    cdf.set_xlim(left=0)
    cdf.set_xlabel("milliseconds")
    cdf.set_ylabel("fraction")
    cdf.set_title("Latency CDF")
    cdf.legend(fontsize=8, loc="lower right")
    cdf.grid(alpha=0.3)
    _timeline(line, runs[0], window_s)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _timeline(ax: Any, run: tuple[str, Tally], window_s: float) -> None:
    label, tally = run
    name, events = max(
        tally.timeline,
        key=lambda item: sum(kind == "shown" for _, _, kind in item[1]),
        default=("", []),
    )
    keys = [t for t, _, kind in events if kind == "key" and t <= window_s]
    ax.vlines(keys, 0.0, 0.8, color="tab:blue", linewidth=0.8, label="keystroke")
    levels = {"shown": 3.0, "empty": 2.0, "cancelled": 1.5, "stale": 2.5}
    for sent, arrived, kind in events:
        if kind == "key" or arrived is None or sent > window_s:
            continue
        y = levels[kind]
        ax.plot([sent, arrived], [y, y], color=COLORS[kind], linewidth=1.2)
        ax.plot([arrived], [y], marker="|", color=COLORS[kind], markersize=8)
    for kind, y in levels.items():
        ax.plot([], [], color=COLORS[kind], label=f"request -> {kind} answer")
        ax.axhline(y, color=COLORS[kind], linewidth=0.3, alpha=0.3)
    ax.set_yticks([])
    ax.set_ylim(-0.1, 3.4)
    last = max((arrived or sent for sent, arrived, _ in events), default=window_s)
    ax.set_xlim(0, min(window_s, last + 0.5))
    ax.set_xlabel(f"seconds into session {name}")
    ax.set_title(f"Timeline ({label}): keystrokes, requests and their answers")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=5, frameon=False)
