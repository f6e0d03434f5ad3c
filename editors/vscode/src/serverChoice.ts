// Which spec-lsp the extension runs or connects to, as pure functions: no vscode import, so
// test/unit.ts checks them in plain Node. config.ts gathers the facts (settings, PATH, files).
import * as path from "node:path";

export interface ServerCommand {
  /** The executable, absolute when it was found on disk. */
  command: string;
  /** Arguments that run the spec-lsp CLI (`[]` for the spec-lsp script, `-m spec_lsp.cli` for Python). */
  prefix: string[];
  /** Where it came from, for messages. */
  origin: string;
}

export interface Candidates {
  /** specLsp.serverPath (machine-scoped: only the user's own settings), expanded; "" when unset. */
  setting: string;
  /** `spec-lsp` found on PATH. */
  onPath: string | undefined;
  /** `.venv/bin/spec-lsp` of each workspace folder that has one. */
  workspaceVenvs: string[];
}

/**
 * The server to start: the user's setting, else `spec-lsp` on PATH, else a workspace's own
 * `.venv/bin/spec-lsp` that `consented` says the user agreed to run (a repository must not choose
 * what runs). Undefined: none; `asked` then lists the workspace servers waiting for an answer.
 */
export function chooseServer(
  c: Candidates,
  consented: (exe: string) => boolean,
): { server?: ServerCommand; asked: string[] } {
  if (c.setting) {
    const python = /^python[0-9.]*$/.test(path.basename(c.setting));
    return { server: { command: c.setting, prefix: python ? ["-m", "spec_lsp.cli"] : [], origin: "specLsp.serverPath" }, asked: [] };
  }
  if (c.onPath) return { server: { command: c.onPath, prefix: [], origin: "PATH" }, asked: [] };
  const agreed = c.workspaceVenvs.find(consented);
  if (agreed) return { server: { command: agreed, prefix: [], origin: "the workspace's .venv, as you allowed" }, asked: [] };
  return { asked: c.workspaceVenvs };
}

/** A shared server's address: `HOST:PORT`, `[IPv6]:PORT`, or a Unix socket path (`/...` or `unix:/...`). */
export type Address = { host: string; port: number } | { socket: string };

export function parseAddress(value: string): Address {
  const v = value.trim();
  if (v.startsWith("unix:")) return { socket: v.slice("unix:".length) };
  if (v.startsWith("/")) return { socket: v };
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(v);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port > 0 && port < 65536)) {
    throw new Error(`specLsp.server.address is "${value}": expected HOST:PORT (e.g. 127.0.0.1:7777) or a socket path`);
  }
  return { host: m[1] ?? (m[2] || "127.0.0.1"), port };
}

/** The folder of the token files `spec-lsp serve --tcp` writes, and of the shared server's socket:
 * $XDG_RUNTIME_DIR/spec-lsp, or ~/.cache/spec-lsp/run without it. */
export function runtimeDir(env: Record<string, string | undefined>, home: string): string {
  return env.XDG_RUNTIME_DIR ? path.join(env.XDG_RUNTIME_DIR, "spec-lsp") : path.join(home, ".cache", "spec-lsp", "run");
}

/** The socket of the shared server the editors start on first use (specLsp.sharedServer, and
 * Neovim's `shared_server`): the same path, so VS Code and Neovim windows share it too. */
export function sharedSocket(env: Record<string, string | undefined>, home: string): string {
  return path.join(runtimeDir(env, home), "shared.sock");
}

/** Seconds a shared server started on first use runs on after its last client left. */
export const SHARED_IDLE_EXIT_S = 300;

/**
 * `serve` (the arguments of `spec-lsp serve`, prefix included) as the shared server: on `socket`,
 * ending SHARED_IDLE_EXIT_S after its last client, logging to `shared.log` beside the socket
 * unless the arguments name a log file.
 */
export function sharedServeArgs(serve: string[], socket: string): string[] {
  const args = [...serve, "--socket", socket, "--idle-exit", String(SHARED_IDLE_EXIT_S)];
  const logged = serve.some((a) => a === "--log-file" || a.startsWith("--log-file="));
  return logged ? args : [...args, "--log-file", path.join(path.dirname(socket), "shared.log")];
}

/**
 * Where the token for a shared server is read from, in order: specLsp.server.tokenFile, else (no
 * file) $SPEC_LSP_TOKEN, else the file `spec-lsp serve --tcp` writes for its port:
 * $XDG_RUNTIME_DIR/spec-lsp/PORT.token, or ~/.cache/spec-lsp/run/PORT.token without it.
 */
export function tokenSource(
  address: Address,
  tokenFile: string,
  env: Record<string, string | undefined>,
  home: string,
): { file: string } | { value: string } | undefined {
  if (tokenFile) return { file: tokenFile };
  if (env.SPEC_LSP_TOKEN) return { value: env.SPEC_LSP_TOKEN };
  if (!("port" in address)) return undefined; // a Unix socket: its permissions protect it
  return { file: path.join(runtimeDir(env, home), `${address.port}.token`) };
}
