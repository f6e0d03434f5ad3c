// The shared server the extension starts on first use (specLsp.sharedServer): connect to its
// socket; when nothing answers, start `spec-lsp serve --socket ...` detached (it outlives this
// window and ends by `--idle-exit` after its last client) and connect once it answers. Every
// window, VS Code's and Neovim's, finds the same socket (serverChoice.sharedSocket).
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import type { StreamInfo } from "vscode-languageclient/node";

/** How long a server just started may take to answer (it imports its libraries first). */
export const START_TIMEOUT_MS = 30_000;

/** A connection to the Unix socket `socket`, or the error that refused it. */
export function connectSocket(socket: string): Promise<StreamInfo> {
  return new Promise((resolve, reject) => {
    const conn = net.connect(socket);
    conn.once("connect", () => resolve({ reader: conn, writer: conn }));
    conn.once("error", reject);
  });
}

/**
 * Connects to the shared server at `socket`, first starting `command args` (detached, in the home
 * folder) when none answers there; `log` gets a line saying so.
 */
export async function connectOrStart(
  command: string,
  args: string[],
  socket: string,
  log: (line: string) => void,
): Promise<StreamInfo> {
  try {
    return await connectSocket(socket);
  } catch {
    // nothing answers: start it below
  }
  fs.mkdirSync(path.dirname(socket), { recursive: true, mode: 0o700 });
  log(`no shared server at ${socket}: starting ${command} ${args.join(" ")}`);
  const child = cp.spawn(command, args, { cwd: os.homedir(), detached: true, stdio: "ignore", env: process.env });
  child.unref();
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    try {
      return await connectSocket(socket);
    } catch (err) {
      // A server that exited may have lost a race to another window's: that one answers soon.
      if (Date.now() > deadline) {
        const why = gone ? "it exited" : `no answer within ${START_TIMEOUT_MS / 1000} s`;
        throw new Error(`the shared server did not start at ${socket} (${why}: ${(err as Error).message}); its log: ${path.join(path.dirname(socket), "shared.log")}`, { cause: err });
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
