// Settings under `specLsp.*`: what goes to the server, and which command starts it.
// Knows nothing about the language client; extension.ts wires these into it.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";

/** Settings that only the extension uses; the rest go to the server as they are. */
const CLIENT_ONLY = new Set(["serverPath", "serverArgs", "recordDirectory"]);

/** The keys of docs/protocol.md's configuration table, read from the user's settings. */
const SERVER_KEYS = [
  "preset",
  "device",
  "maxTokens",
  "debounceMs",
  "enabledLanguages",
  "temperature",
  "enabled",
  "speculation",
  "kvReuse",
  "trustRemoteCode",
] as const;

export type ServerOptionsObject = Record<string, unknown>;

/** The object sent as initializationOptions and under settings.specLsp on change. */
export function serverSettings(): ServerOptionsObject {
  const cfg = vscode.workspace.getConfiguration("specLsp");
  const out: ServerOptionsObject = {};
  for (const key of SERVER_KEYS) out[key] = cfg.get(key);
  return out;
}

/** True when a change to the settings needs a new server process rather than a notification. */
export function needsRestart(e: vscode.ConfigurationChangeEvent): boolean {
  return [...CLIENT_ONLY].some((k) => k !== "recordDirectory" && e.affectsConfiguration(`specLsp.${k}`));
}

export interface ServerCommand {
  /** The executable, absolute when it was found on disk. */
  command: string;
  /** Arguments that run the spec-lsp CLI (`[]` for the spec-lsp script, `-m spec_lsp.cli` for Python). */
  prefix: string[];
  /** Where it came from, for messages. */
  origin: string;
}

export class ServerNotFound extends Error {}

function expand(p: string, folder: string | undefined): string {
  let out = p.replace(/^~(?=$|\/)/, os.homedir());
  if (folder) out = out.replace(/\$\{workspaceFolder\}/g, folder);
  return out;
}

function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

/** spec-lsp's CLI: the setting, else a workspace `.venv`, else `spec-lsp` on PATH. */
export function resolveServer(): ServerCommand {
  const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const setting = vscode.workspace.getConfiguration("specLsp").get<string>("serverPath", "").trim();
  if (setting) {
    const p = expand(setting, folders[0]);
    if (!isExecutable(p)) {
      throw new ServerNotFound(`specLsp.serverPath is "${setting}", which is not an executable file.`);
    }
    const python = /^python[0-9.]*$/.test(path.basename(p));
    return { command: p, prefix: python ? ["-m", "spec_lsp.cli"] : [], origin: "specLsp.serverPath" };
  }
  for (const folder of folders) {
    const exe = path.join(folder, ".venv", "bin", "spec-lsp");
    if (isExecutable(exe)) return { command: exe, prefix: [], origin: `${folder}/.venv` };
  }
  const found = onPath("spec-lsp");
  if (found) return { command: found, prefix: [], origin: "PATH" };
  throw new ServerNotFound(
    "No spec-lsp server found: specLsp.serverPath is empty, no workspace folder has .venv/bin/spec-lsp " +
      "and spec-lsp is not on PATH.",
  );
}

/** The argument list after the executable for `spec-lsp serve`, optionally wrapped in `spec-lsp record`. */
export function serveArgs(server: ServerCommand, recordTo?: string): string[] {
  const extra = vscode.workspace.getConfiguration("specLsp").get<string[]>("serverArgs", []);
  const serve = [...server.prefix, "serve", ...extra];
  if (!recordTo) return serve;
  return [...server.prefix, "record", "--out", recordTo, "--", server.command, ...serve];
}

/** Where a new recorded session goes. */
export function recordPath(storage: vscode.Uri): string {
  const folders = vscode.workspace.workspaceFolders ?? [];
  const setting = vscode.workspace.getConfiguration("specLsp").get<string>("recordDirectory", "").trim();
  const dir = setting
    ? expand(setting, folders[0]?.uri.fsPath)
    : folders.length
      ? path.join(folders[0].uri.fsPath, ".spec-lsp", "sessions")
      : path.join(storage.fsPath, "sessions");
  fs.mkdirSync(dir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  return path.join(dir, `session-${stamp}.jsonl`);
}
