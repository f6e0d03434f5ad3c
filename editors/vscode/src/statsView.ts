// A read-only Markdown document (spec-lsp-stats:stats.md) that renders spec-lsp/stats and
// spec-lsp/status as tables. It only formats; extension.ts fetches the numbers.
import * as vscode from "vscode";
import type { Percentiles, Stats, Status } from "./protocol";
import { pct } from "./status";

export const SCHEME = "spec-lsp-stats";
export const STATS_URI = vscode.Uri.parse(`${SCHEME}:spec-lsp stats.md`);

export class StatsView implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private text = "# spec-lsp stats\n\nThe server has not answered yet.\n";

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

export function render(status: Status | undefined, stats: Stats | undefined, note?: string): string {
  const out = ["# spec-lsp stats", ""];
  if (note) out.push(`> ${note}`, "");
  if (status) {
    out.push(`Model: **${status.preset}** on ${status.device}, ${status.state}`);
    out.push(`Target: ${status.target}; draft: ${status.draft ?? "none"}`);
    if (status.error) out.push(`Error: ${status.error}`);
    out.push("");
  }
  if (!stats) return out.join("\n") + "\n";
  out.push("| suggestions | count |", "| --- | ---: |");
  const counts: [string, unknown][] = [
    ["requests", stats.requests],
    ["answered", stats.answered],
    ["cancelled", stats.cancelled],
    ["empty", stats.empty],
    ["cache hits", stats.cacheHits],
    ["typed through", stats.typedThrough],
    ["shown", stats.shown],
    ["accepted", stats.accepted],
    ["partially accepted", stats.partiallyAccepted],
    ["accepted characters", stats.acceptedChars],
    ["last latency (ms)", stats.lastLatencyMs],
    ["draft acceptance", typeof stats.acceptance === "number" ? pct(stats.acceptance) : "-"],
  ];
  for (const [k, v] of counts) out.push(`| ${k} | ${num(v)} |`);
  out.push("", "| latency (ms) | p50 | p90 | p99 |", "| --- | ---: | ---: | ---: |");
  for (const [stage, p] of Object.entries<Percentiles | undefined>(stats.latencyMs ?? {})) {
    out.push(`| ${stage} | ${num(p?.p50)} | ${num(p?.p90)} | ${num(p?.p99)} |`);
  }
  out.push("", "| KV reuse | tokens |", "| --- | ---: |");
  for (const [k, v] of Object.entries(stats.kvReuse ?? {})) out.push(`| ${k} | ${num(v)} |`);
  return out.join("\n") + "\n";
}
