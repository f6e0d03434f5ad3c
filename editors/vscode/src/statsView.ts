// A read-only document (spec-lsp-stats:spec-lsp stats) that shows spec-lsp/stats and
// spec-lsp/status as aligned text tables. It only formats; extension.ts fetches the numbers.
import * as vscode from "vscode";
import type { Percentiles, Stats, Status } from "./protocol";
import { pct } from "./statusText";

export const SCHEME = "spec-lsp-stats";
export const STATS_URI = vscode.Uri.parse(`${SCHEME}:spec-lsp stats`);

export class StatsView implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private text = "spec-lsp stats\n\nThe server has not answered yet.\n";

  update(status: Status | undefined, stats: Stats | undefined, note?: string): void {
    this.text = render(status, stats, note);
    this.changed.fire(STATS_URI);
  }

  provideTextDocumentContent(): string {
    return this.text;
  }

  dispose(): void {
    this.changed.dispose();
  }
}

function num(x: unknown): string {
  if (x === null || x === undefined) return "-";
  if (typeof x === "number") return Number.isInteger(x) ? String(x) : x.toFixed(1);
  return typeof x === "string" ? x : JSON.stringify(x);
}

/** Rows of cells as indented text columns: the first `left` columns left-aligned, the rest right-aligned. */
function table(rows: string[][], left = 1): string[] {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  const cell = (c: string, i: number) => (i < left ? c.padEnd(widths[i]) : c.padStart(widths[i]));
  return rows.map((r) => ("  " + r.map(cell).join("   ")).trimEnd());
}

export function render(status: Status | undefined, stats: Stats | undefined, note?: string): string {
  const out = ["spec-lsp stats (updated as suggestions come; run 'spec-lsp: Show stats' to refresh)", ""];
  if (note) out.push(note, "");
  if (status) {
    const model = [
      ["preset", `${status.preset} on ${status.device}, ${status.state}`],
      ["target", status.target],
      ["draft", status.draft ?? "none"],
    ];
    if (status.engine) model.push(["engine", `${status.engine.remote}, ${status.engine.available ? "answers" : "failing"}`]);
    if (status.error) model.push(["error", status.error]);
    out.push("Model", ...table(model, 2), "");
  }
  if (!stats) return out.join("\n") + "\n";
  out.push("Suggestions", ...table([
    ["requests", num(stats.requests)],
    ["answered", num(stats.answered)],
    ["cancelled", num(stats.cancelled)],
    ["empty", num(stats.empty)],
    ["cache hits", num(stats.cacheHits)],
    ["typed through", num(stats.typedThrough)],
    ["shown", num(stats.shown)],
    ["accepted", num(stats.accepted)],
    ["partially accepted", num(stats.partiallyAccepted)],
    ["accepted characters", num(stats.acceptedChars)],
    ["last latency (ms)", num(stats.lastLatencyMs)],
    ["draft acceptance", typeof stats.acceptance === "number" ? pct(stats.acceptance) : "-"],
  ]), "");
  const stages = Object.entries<Percentiles | undefined>(stats.latencyMs ?? {});
  out.push("Latency (ms)", ...table([["", "p50", "p90", "p99"], ...stages.map(([stage, p]) => [stage, num(p?.p50), num(p?.p90), num(p?.p99)])]), "");
  out.push("KV reuse", ...table(Object.entries(stats.kvReuse ?? {}).map(([k, v]) => [k, num(v)])));
  return out.join("\n") + "\n";
}
