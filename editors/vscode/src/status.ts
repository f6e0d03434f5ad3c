// The status bar item: model loading progress, then the last suggestion's latency and acceptance,
// or why a remote engine fails. It only renders what it is told (statusText.ts picks the words);
// client.ts feeds it from $/progress, spec-lsp/status and spec-lsp/stats. Clicking it runs
// spec-lsp.menu (stats, on/off, this language, preset, log, restart).
import * as vscode from "vscode";
import type { Stats, Status } from "./protocol";
import { describe } from "./statusText";

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
    this.item.command = "spec-lsp.menu";
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
    const { text, tooltip, severity } = describe({
      status: this.status,
      stats: this.stats,
      progress: this.progress,
      problem: this.problem,
    });
    this.item.text = rec + text;
    const lines = [tooltip];
    if (this.recording) lines.push(`Recording this session to ${this.recording}`);
    lines.push("Click for the spec-lsp menu");
    this.item.tooltip = lines.join("\n");
    this.item.backgroundColor = severity ? new vscode.ThemeColor(`statusBarItem.${severity}Background`) : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}

