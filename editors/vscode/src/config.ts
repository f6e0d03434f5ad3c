// Settings under `specLsp.*`: what goes to the server, and which server runs or is connected to.
// Knows nothing about the language client; client.ts wires these into it. The decisions themselves
// are pure functions in settingsWire.ts and serverChoice.ts.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import { type Address, chooseServer, parseAddress, type ServerCommand, tokenSource } from "./serverChoice";
import { setSettings } from "./settingsWire";

export type { ServerCommand } from "./serverChoice";

/** Settings that only the extension uses; the rest go to the server. */
export const CLIENT_ONLY = new Set(["serverPath", "serverArgs", "server.address", "server.tokenFile", "sharedServer", "recordDirectory", "autoTrigger", "nextEditIdleMs", "nextEditWhileTyping", "editorDefinitions"]);
/** Settings that change which process runs or how it is reached: a change restarts the server. */
const RESTART_KEYS = ["serverPath", "serverArgs", "server.address", "server.tokenFile", "sharedServer"];
/** In an untrusted workspace these take the user's own value only (package.json's capabilities). */
const RESTRICTED = new Set(["preset", "device"]);

/** The server's options a client may set (docs/protocol.md's configuration table). */
// settings: written by tools/gen_settings.py from spec_lsp/config.py
export const SERVER_KEYS = [
  "preset",
  "device",
  "maxTokens",
  "blockTokens",
  "debounceMs",
  "enabledLanguages",
  "temperature",
  "enabled",
  "speculation",
  "kvReuse",
  "prefetch",
  "partialMs",
  "shortWindow",
  "nextEdit",
  "exclude",
  "privateFiles",
  "crossFile",
  "definitions",
  "editContext",
] as const;
// end of settings

export type ServerOptionsObject = Record<string, unknown>;

function cfg(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration("specLsp");
}

/**
 * The object sent as initializationOptions and under settings.specLsp on change: only the keys the
 * user set (the server keeps its defaults and `spec-lsp serve` flags for the rest).
 */
export function serverSettings(): ServerOptionsObject {
  const c = cfg();
  return setSettings(SERVER_KEYS, (k) => c.inspect(k), RESTRICTED, vscode.workspace.isTrusted);
}

/** True when a change to the settings needs a new server process rather than a notification. */
export function needsRestart(e: vscode.ConfigurationChangeEvent): boolean {
  return RESTART_KEYS.some((k) => e.affectsConfiguration(`specLsp.${k}`));
}

/** Suggestions only on request ("spec-lsp: Suggest here", Alt+\), none while typing. */
export function manualOnly(): boolean {
  return cfg().get<boolean>("autoTrigger", true) === false;
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

/** The user's answers to "run this workspace's own spec-lsp?", kept per workspace. */
export interface Consent {
  get(exe: string): boolean | undefined;
  /** Asks the user once; the answer is kept. */
  ask(exe: string): Promise<boolean>;
}

/**
 * spec-lsp's CLI: the setting, else `spec-lsp` on PATH, else a workspace's `.venv/bin/spec-lsp`
 * once the user agreed to run it (asked once per workspace, and never in an untrusted one).
 */
export async function resolveServer(consent: Consent): Promise<ServerCommand> {
  const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const raw = cfg().get<string>("serverPath", "").trim();
  const setting = raw ? expand(raw, folders[0]) : "";
  if (setting && !isExecutable(setting)) {
    throw new ServerNotFound(`specLsp.serverPath is "${raw}", which is not an executable file.`);
  }
  const venvs = folders.map((f) => path.join(f, ".venv", "bin", "spec-lsp")).filter(isExecutable);
  const candidates = { setting, onPath: onPath("spec-lsp"), workspaceVenvs: vscode.workspace.isTrusted ? venvs : [] };
  let choice = chooseServer(candidates, (exe) => consent.get(exe) === true);
  for (const exe of choice.asked.filter((e) => consent.get(e) === undefined)) {
    if (await consent.ask(exe)) {
      choice = chooseServer(candidates, (e) => consent.get(e) === true);
      break;
    }
  }
  if (choice.server) return choice.server;
  const declined = venvs.length ? ` (the workspace's ${venvs[0]} was not allowed to run)` : "";
  throw new ServerNotFound(`No spec-lsp server found: specLsp.serverPath is empty and spec-lsp is not on PATH${declined}.`);
}

/** Whether to use the shared server started on first use (specLsp.sharedServer), when no
 * specLsp.server.address names one. */
export function sharedServerOn(): boolean {
  return cfg().get<boolean>("sharedServer", false);
}

/** The shared server to connect to (specLsp.server.address), or undefined to start one. */
export function sharedServer(): { address: Address; text: string; token: string | undefined } | undefined {
  const text = cfg().get<string>("server.address", "").trim();
  if (!text) return undefined;
  const address = parseAddress(text);
  const tokenFile = expand(cfg().get<string>("server.tokenFile", "").trim(), undefined);
  const source = tokenSource(address, tokenFile, process.env, os.homedir());
  let token: string | undefined;
  if (source && "value" in source) token = source.value;
  else if (source) {
    try {
      token = fs.readFileSync(source.file, "utf8").trim();
    } catch (err) {
      if (tokenFile || "port" in address) {
        throw new ServerNotFound(`no token for the spec-lsp server at ${text}: cannot read ${source.file} (${(err as Error).message}); set specLsp.server.tokenFile or SPEC_LSP_TOKEN.`);
      }
    }
  }
  return { address, text, token };
}

/** The argument list after the executable for `spec-lsp serve`, optionally wrapped in `spec-lsp record`. */
export function serveArgs(server: ServerCommand, recordTo?: string): string[] {
  const extra = cfg().get<string[]>("serverArgs", []);
  const serve = [...server.prefix, "serve", ...extra];
  if (!recordTo) return serve;
  return [...server.prefix, "record", "--out", recordTo, "--", server.command, ...serve];
}

/** Where a new recorded session goes: specLsp.recordDirectory, else the extension's own storage
 * (outside every workspace, so a recording never lands in a repository). */
export function recordPath(storage: vscode.Uri): string {
  const setting = cfg().get<string>("recordDirectory", "").trim();
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const dir = setting ? expand(setting, folder) : path.join(storage.fsPath, "sessions");
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  return path.join(dir, `session-${stamp}.jsonl`);
}
