// The status bar item's menu: suggestions on/off, on/off for this language, pick a preset, the
// stats, the log, a restart. Each entry runs a command of extension.ts; this module only asks.
import * as cp from "node:child_process";
import * as os from "node:os";
import * as vscode from "vscode";
import type { ServerCommand } from "./serverChoice";
import { languageOn, toggleLanguage } from "./settingsWire";

interface Entry extends vscode.QuickPickItem {
  command: string;
}

/** `nextEditShown`: a next edit is on screen (its accept and dismiss join the menu). */
export async function showMenu(nextEditShown = false): Promise<void> {
  const cfg = vscode.workspace.getConfiguration("specLsp");
  const enabled = cfg.get<boolean>("enabled", true);
  const language = vscode.window.activeTextEditor?.document.languageId;
  const entries: Entry[] = [
    { label: "$(graph) Show stats", command: "spec-lsp.showStats" },
    { label: enabled ? "$(circle-slash) Disable suggestions" : "$(check) Enable suggestions", command: "spec-lsp.toggle" },
  ];
  if (language) {
    const on = languageOn(cfg.get<string[]>("enabledLanguages", ["*"]), language);
    entries.push({ label: `$(symbol-namespace) ${on ? "Disable" : "Enable"} for ${language}`, command: "spec-lsp.toggleLanguage" });
  }
  const auto = cfg.get<boolean>("autoTrigger", true);
  const nextEdit = cfg.get<boolean>("nextEdit", true);
  if (nextEditShown) {
    entries.push(
      { label: "$(check) Go to / accept the next edit (Tab)", command: "specLsp.acceptNextEdit" },
      { label: "$(close) Dismiss the next edit (Escape)", command: "specLsp.dismissNextEdit" },
    );
  }
  entries.push(
    { label: nextEdit ? "$(arrow-swap) Disable next edit suggestions" : "$(arrow-swap) Enable next edit suggestions", command: "specLsp.toggleNextEdit" },
    { label: auto ? "$(keyboard) Suggest only on request" : "$(keyboard) Suggest while typing", command: "spec-lsp.toggleAutoTrigger" },
    { label: "$(server) Pick a preset…", description: cfg.get<string>("preset"), command: "spec-lsp.pickPreset" },
    { label: "$(output) Show log", command: "spec-lsp.showLog" },
    { label: "$(debug-restart) Restart server", command: "spec-lsp.restart" },
  );
  const pick = await vscode.window.showQuickPick(entries, { title: "spec-lsp", placeHolder: "spec-lsp" });
  if (pick) await vscode.commands.executeCommand(pick.command);
}

/** Suggestions while typing, or only on request (specLsp.autoTrigger, user settings). */
export async function toggleAutoTrigger(): Promise<void> {
  const cfg = vscode.workspace.getConfiguration("specLsp");
  await cfg.update("autoTrigger", !cfg.get<boolean>("autoTrigger", true), vscode.ConfigurationTarget.Global);
}

/** Suggestions on or off for the active editor's language (`"!id"` in specLsp.enabledLanguages). */
export async function toggleActiveLanguage(): Promise<void> {
  const language = vscode.window.activeTextEditor?.document.languageId;
  if (!language) return;
  const cfg = vscode.workspace.getConfiguration("specLsp");
  const current = cfg.inspect<string[]>("enabledLanguages")?.globalValue ?? ["*"];
  await cfg.update("enabledLanguages", toggleLanguage(current, language), vscode.ConfigurationTarget.Global);
}

interface PresetInfo {
  name: string;
  description?: string;
  offline?: boolean;
  backend?: string;
}

/** How a preset runs, as `spec-lsp models list` says: nothing for a local one ready offline. */
function presetNote(p: PresetInfo): string | undefined {
  if (p.backend && p.backend !== "local") return `remote engine (${p.backend})`;
  return p.offline === false ? "needs a download first" : undefined;
}

/** `spec-lsp models list --json`, run by the local server command. */
function listPresets(server: ServerCommand): Promise<PresetInfo[]> {
  return new Promise((resolve, reject) => {
    const args = [...server.prefix, "models", "list", "--json"];
    cp.execFile(server.command, args, { cwd: os.homedir(), timeout: 120_000 }, (err: Error | null, stdout) => {
      if (err) reject(err);
      else resolve(JSON.parse(stdout) as PresetInfo[]);
    });
  });
}

/** Picks a preset from `spec-lsp models list` (or types a name) into specLsp.preset (user settings). */
export async function pickPreset(server: () => Promise<ServerCommand>): Promise<void> {
  const cfg = vscode.workspace.getConfiguration("specLsp");
  let name: string | undefined;
  try {
    const presets = await listPresets(await server());
    const items = presets.map((p) => ({
      label: p.name,
      description: presetNote(p),
      detail: p.description,
    }));
    name = (await vscode.window.showQuickPick(items, { title: "spec-lsp: pick a preset", placeHolder: cfg.get<string>("preset") }))?.label;
  } catch (err) {
    name = await vscode.window.showInputBox({
      title: "spec-lsp: preset name",
      prompt: `Could not list the presets (${err instanceof Error ? err.message : String(err)}); type a name`,
      value: cfg.get<string>("preset"),
    });
  }
  if (name) await cfg.update("preset", name.trim(), vscode.ConfigurationTarget.Global);
}
