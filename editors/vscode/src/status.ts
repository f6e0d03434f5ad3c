// The status bar item: model loading progress, then the last suggestion's latency and acceptance.
// It only renders what it is told; extension.ts feeds it from $/progress, spec-lsp/status and
// spec-lsp/stats. Clicking it runs spec-lsp.showStats.
import * as vscode from "vscode";
import type { Stats, Status } from "./protocol";

export class StatusItem implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private status: Status | undefined;
  private stats: Stats | undefined;
  private progress: string | undefined;
  private problem: string | undefined;
  private recording: string | undefined;

  constructor() {
    this.item = vscode.window.createStatusBarItem("spec-lsp.status", vscode.StatusBarAlignment.Right, 100);
    this.item.name = "spec-lsp";
    this.item.command = "spec-lsp.showStats";
    this.render();
    this.item.show();
  }

  /** Work-done progress from the server (model loading); undefined when it ends. */
  setProgress(message: string | undefined): void {
    this.progress = message;
    this.render();
  }

  setStatus(status: Status): void {
    this.status = status;
    if (status.state !== "loading") this.progress = undefined;
    this.render();
  }

  /** A new server process: forget what the last one said. */
  reset(): void {
    this.status = undefined;
    this.stats = undefined;
    this.progress = undefined;
    this.problem = undefined;
    this.render();
  }

  setStats(stats: Stats): void {
    this.stats = stats;
    this.render();
  }

  /** A problem on the client side (server missing, crashed); undefined clears it. */
  setProblem(problem: string | undefined): void {
    this.problem = problem;
    this.render();
  }

  setRecording(file: string | undefined): void {
    this.recording = file;
    this.render();
  }

  private render(): void {
    const rec = this.recording ? "$(record) " : "";
    const [text, tooltip] = this.describe();
    this.item.text = rec + text;
    const lines = [tooltip];
    if (this.recording) lines.push(`Recording this session to ${this.recording}`);
    lines.push("Click for spec-lsp stats");
    this.item.tooltip = lines.join("\n");
    const bad = this.problem !== undefined || this.status?.state === "failed";
    this.item.backgroundColor = bad ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  }

  private describe(): [string, string] {
    if (this.problem) return ["$(error) spec-lsp", this.problem];
    const s = this.status;
    if (this.progress !== undefined || !s) {
      return [`$(loading~spin) spec-lsp ${this.progress ?? "starting"}`, "spec-lsp: loading the models"];
    }
    const model = `${s.preset} on ${s.device}: ${s.target}${s.draft ? ` + draft ${s.draft}` : ""}`;
    switch (s.state) {
      case "loading":
        return ["$(loading~spin) spec-lsp loading", `Loading ${model}`];
      case "failed":
        return ["$(error) spec-lsp failed", `Model load failed: ${s.error ?? "unknown error"}`];
      case "disabled":
        return ["$(circle-slash) spec-lsp off", "Suggestions are off (spec-lsp: Toggle suggestions)"];
    }
    const st = this.stats;
    if (!st || st.lastLatencyMs === null || st.lastLatencyMs === undefined || st.shown === 0) {
      return [`$(zap) spec-lsp ${s.preset}`, `Ready: ${model}`];
    }
    const accepted = st.accepted + (st.partiallyAccepted ?? 0);
    const draft = typeof st.acceptance === "number" ? `, draft tokens accepted ${pct(st.acceptance)}` : "";
    return [
      `$(zap) spec-lsp ${Math.round(st.lastLatencyMs)} ms · ${accepted}/${st.shown} accepted`,
      `Last suggestion took ${Math.round(st.lastLatencyMs)} ms; ${accepted} of ${st.shown} shown ` +
        `suggestions accepted (${st.partiallyAccepted ?? 0} partly)${draft}.\n${model}`,
    ];
  }

  dispose(): void {
    this.item.dispose();
  }
}

export function pct(x: number): string {
  return `${Math.round(x * 100)}%`;
}
