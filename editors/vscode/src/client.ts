// One spec-lsp server process and its language client: start, stop, restart, failure messages.
// Inline completion itself is vscode-languageclient's built-in feature; this adds the middleware
// that reports shown/accepted suggestions and the feature that turns $/progress into the status bar.
import * as cp from "node:child_process";
import * as net from "node:net";
import * as os from "node:os";
import * as vscode from "vscode";
import {
  CloseAction,
  type ClientCapabilities,
  DidChangeConfigurationNotification,
  ErrorAction,
  type FeatureState,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  type StreamInfo,
  RevealOutputChannelOn,
  type StaticFeature,
  State,
  WorkDoneProgress,
  WorkDoneProgressCreateRequest,
} from "vscode-languageclient/node";
import {
  type Consent,
  manualOnly,
  resolveServer,
  type ServerCommand,
  ServerNotFound,
  serveArgs,
  serverSettings,
  sharedServer,
  sharedServerOn,
} from "./config";
import { type Address, sharedServeArgs, sharedSocket } from "./serverChoice";
import { connectOrStart } from "./sharedStart";
import { removedKeys } from "./settingsWire";
import { CursorRests } from "./cursor";
import { Feedback } from "./feedback";
import {
  AcceptCommand,
  AcceptInlineEditCommand,
  DidMoveCursor,
  type Stats,
  StatsRequest,
  type Status,
  StatusRequest,
  suggestionId,
} from "./protocol";
import type { StatusItem } from "./status";

const FIX =
  "Fix: install spec-lsp (`pipx install spec-lsp`, or `make setup` in its checkout), or set " +
  "specLsp.serverPath to a working spec-lsp executable, then run 'spec-lsp: Restart server'. " +
  "`spec-lsp doctor` says what is missing.";
const SHARED_FIX =
  "Fix: start it (`spec-lsp serve --tcp HOST:PORT`, or `--socket PATH`), check " +
  "specLsp.server.address and the token (specLsp.server.tokenFile or SPEC_LSP_TOKEN), then run " +
  "'spec-lsp: Restart server'. With specLsp.sharedServer, the log is shared.log beside its socket.";

/** Connects to a shared `spec-lsp serve --tcp` / `--socket` server. */
function connect(address: Address): Promise<StreamInfo> {
  return new Promise((resolve, reject) => {
    const socket = "socket" in address ? net.connect(address.socket) : net.connect(address.port, address.host);
    socket.once("connect", () => resolve({ reader: socket, writer: socket }));
    socket.once("error", reject);
  });
}

/** Turns the server's work-done progress (model loading) into status bar text. */
class ProgressFeature implements StaticFeature {
  constructor(
    private readonly client: LanguageClient,
    private readonly report: (text: string | undefined) => void,
  ) {}

  fillClientCapabilities(capabilities: ClientCapabilities): void {
    capabilities.window = { ...capabilities.window, workDoneProgress: true };
  }

  initialize(): void {
    // Registered after the client's own progress feature, so this handler replaces its notification.
    this.client.onRequest(WorkDoneProgressCreateRequest.type, ({ token }) => {
      const sub = this.client.onProgress(WorkDoneProgress.type, token, (value) => {
        if (value.kind === "end") {
          sub.dispose();
          this.report(undefined);
        } else {
          this.report(value.percentage !== undefined ? `loading ${Math.round(value.percentage)}%` : "loading");
        }
      });
    });
  }

  getState(): FeatureState {
    return { kind: "static" };
  }

  clear(): void {
    this.report(undefined);
  }
}

/** Errors go to the output channel only: the user gets one notification of ours, with the fix. */
class QuietClient extends LanguageClient {
  override error(message: string, data?: unknown): void {
    super.error(message, data, false);
  }
}

/** Where ghost text was offered: the document, its version and the cursor's offset. */
export interface OfferedCompletion {
  document: vscode.TextDocument;
  version: number;
  offset: number;
}

export class Server implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private stderrTail: string[] = [];
  /** Settles when the child has exited and its stdout and stderr are closed (all stderr read). */
  private childClosed: Promise<void> | undefined;
  private starting = false;
  private failureShown = false;
  private stopping = false;
  private crashes: number[] = [];
  private refreshTimer: NodeJS.Timeout | undefined;
  private statusTimer: NodeJS.Timeout | undefined;
  private readonly feedback: Feedback;
  private readonly cursor: CursorRests;
  /** The settings the running server was given (initializationOptions, then each change). */
  private sent: Record<string, unknown> = {};
  /** Where the running server is: a command line, or a shared server's address. */
  private where = "";
  lastStatus: Status | undefined;
  lastStats: Stats | undefined;
  private readonly completionOffered = new vscode.EventEmitter<OfferedCompletion>();
  /** The inline completion provider returned ghost text (nextEdit.ts gives way to it). */
  readonly onDidOfferCompletion = this.completionOffered.event;

  constructor(
    private readonly output: vscode.LogOutputChannel,
    private readonly status: StatusItem,
    private readonly onStats: () => void,
    private readonly consent: Consent,
  ) {
    this.feedback = new Feedback(
      (method, params) => void this.client?.sendNotification(method, params),
      () => this.refreshSoon(),
      (line) => this.output.info(line),
    );
    this.cursor = new CursorRests((document, position) => {
      const client = this.client;
      if (!client || !this.running) return;
      const c2p = client.code2ProtocolConverter;
      void client.sendNotification(DidMoveCursor, {
        textDocument: c2p.asVersionedTextDocumentIdentifier(document),
        position: c2p.asPosition(position),
      });
    });
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** The language client while the server runs (nextEdit.ts sends its requests through it). */
  get languageClient(): LanguageClient | undefined {
    return this.running ? this.client : undefined;
  }

  /** Whether the extension connects to a shared server rather than starting its own. */
  get shared(): boolean {
    return this.where.startsWith("the shared server");
  }

  async start(recordTo?: string): Promise<void> {
    this.failureShown = false;
    this.lastStatus = undefined;
    this.lastStats = undefined;
    this.status.reset();
    let serverOptions: ServerOptions;
    const init: Record<string, unknown> = serverSettings();
    this.sent = { ...init };
    try {
      const shared = sharedServer();
      if (shared) {
        if (recordTo) throw new ServerNotFound("recording needs a server the extension starts: clear specLsp.server.address.");
        this.where = `the shared server at ${shared.text}`;
        if (shared.token !== undefined) init.token = shared.token;
        this.output.info(`connecting to ${this.where}${shared.token !== undefined ? " with its token" : ""}`);
        serverOptions = () => connect(shared.address);
      } else if (sharedServerOn()) {
        if (recordTo) throw new ServerNotFound("recording needs a server of this window's own: turn specLsp.sharedServer off.");
        const server = await resolveServer(this.consent);
        const socket = sharedSocket(process.env, os.homedir());
        const args = sharedServeArgs(serveArgs(server), socket);
        this.where = `the shared server at ${socket}`;
        this.output.info(`connecting to ${this.where} (started on first use)`);
        serverOptions = () => connectOrStart(server.command, args, socket, (line) => this.output.info(line));
      } else {
        const server = await resolveServer(this.consent);
        const args = serveArgs(server, recordTo);
        this.where = `${server.command}, from ${server.origin}`;
        this.output.info(`starting ${server.command} ${args.join(" ")} (from ${server.origin})`);
        serverOptions = () => this.spawn(server, args);
      }
    } catch (err) {
      if (!(err instanceof ServerNotFound || err instanceof Error)) throw err;
      this.fail(`spec-lsp: ${err.message} ${this.shared ? SHARED_FIX : FIX}`);
      return;
    }
    const client = new QuietClient("spec-lsp", "spec-lsp", serverOptions, this.options(init));
    client.registerFeature(new ProgressFeature(client, (text) => this.status.setProgress(text)));
    this.client = client;
    this.starting = true;
    try {
      await client.start();
    } catch (err) {
      await this.reportFailure(err);
      return;
    } finally {
      this.starting = false;
    }
    this.pollStatus();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    clearTimeout(this.statusTimer);
    clearTimeout(this.refreshTimer);
    if (!client) return;
    this.stopping = true;
    try {
      if (client.state !== State.Stopped) await client.stop(5000);
    } catch (err) {
      this.output.warn(`stopping the server: ${String(err)}`);
    } finally {
      this.stopping = false;
    }
  }

  async restart(recordTo?: string): Promise<void> {
    await this.stop();
    await this.start(recordTo);
  }

  /**
   * Sends the settings the user set; the server may reload its models, so watch its status again.
   * A setting removed since the last send cannot be unsent: a new server starts from its defaults.
   */
  configurationChanged(recordTo?: string): void {
    if (!this.running) return;
    const now = serverSettings();
    if (removedKeys(this.sent, now).length) {
      this.output.info(`settings removed (${removedKeys(this.sent, now).join(", ")}): restarting the server`);
      void this.restart(recordTo);
      return;
    }
    this.sent = now;
    this.output.info(`settings sent: ${JSON.stringify(now)}${manualOnly() ? "; suggestions only on request (specLsp.autoTrigger off)" : ""}`);
    void this.client?.sendNotification(DidChangeConfigurationNotification.type, {
      settings: { specLsp: now },
    });
    clearTimeout(this.statusTimer);
    this.statusTimer = setTimeout(() => this.pollStatus(), 300);
  }

  async fetch(): Promise<void> {
    if (!this.running || !this.client) return;
    const [status, stats] = await Promise.all([
      this.client.sendRequest<Status>(StatusRequest, {}),
      this.client.sendRequest<Stats>(StatsRequest, {}),
    ]);
    this.lastStatus = status;
    this.lastStats = stats;
    this.status.setStatus(status);
    this.status.setStats(stats);
  }

  private spawn(server: ServerCommand, args: string[]): Promise<cp.ChildProcess> {
    // A neutral directory: nothing in the workspace is looked up relative to the server's cwd.
    const child = cp.spawn(server.command, args, { cwd: os.homedir(), stdio: "pipe", env: process.env });
    this.stderrTail = [];
    const tail: string[] = this.stderrTail;
    this.childClosed = new Promise((resolve) => child.once("close", () => resolve()));
    child.stderr?.on("data", (chunk: Buffer) => {
      tail.push(...chunk.toString("utf8").split("\n").filter((l) => l.trim()));
      tail.splice(0, Math.max(0, tail.length - 5));
    });
    return new Promise((resolve, reject) => {
      child.once("spawn", () => resolve(child));
      child.once("error", reject);
    });
  }

  private options(init: Record<string, unknown>): LanguageClientOptions {
    return {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      initializationOptions: init,
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationFailedHandler: () => false, // start() then rejects, and reports it
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => this.closed(),
      },
      middleware: {
        provideInlineCompletionItems: async (document, position, context, token, next) => {
          // specLsp.autoTrigger false: only an explicit request (spec-lsp: Suggest here, Alt+\) asks.
          if (manualOnly() && context.triggerKind === vscode.InlineCompletionTriggerKind.Automatic) return null;
          const version = document.version;
          const result = await next(document, position, context, token);
          // A remote engine's failure or recovery shows only in spec-lsp/status (the server sends
          // no notification): read it, with the stats, once the typing pauses.
          this.refreshSoon();
          const items = Array.isArray(result) ? result : (result?.items ?? []);
          const first = items[0];
          const id = suggestionId(first?.command?.arguments);
          const text = typeof first?.insertText === "string" ? first.insertText : first?.insertText.value;
          if (first && id && text) {
            const offset = document.offsetAt(first.range?.start ?? position);
            this.feedback.offered({ id, text, document, version, offset });
          }
          if (first && text) this.completionOffered.fire({ document, version, offset: document.offsetAt(position) });
          return result;
        },
        executeCommand: async (command, args, next) => {
          const result: unknown = await next(command, args);
          if (command === AcceptCommand) this.feedback.accepted(suggestionId(args));
          if (command === AcceptInlineEditCommand) this.refreshSoon();
          return result;
        },
      },
    };
  }

  private closed(): { action: CloseAction; handled: boolean } {
    if (this.stopping || this.starting) return { action: CloseAction.DoNotRestart, handled: true };
    const now = Date.now();
    this.crashes = [...this.crashes.filter((t) => now - t < 180_000), now];
    if (this.lastStatus && this.crashes.length <= 3) {
      this.output.warn("the server exited; restarting it");
      return { action: CloseAction.Restart, handled: true };
    }
    const why = this.shared ? "it closed the connection (a wrong or missing token, or another editor connected?)" : "the server process exited";
    void this.reportFailure(new Error(why));
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  /**
   * Waits (briefly) until a dying server has exited and its stderr is read to the end, so its last
   * stderr line can say why, then tells the user. "close", not "exit": a process can exit before
   * Node has read what it wrote, and the client's own error (a write to the closed stdin) says nothing.
   */
  private async reportFailure(err: unknown): Promise<void> {
    const closed = this.shared ? undefined : this.childClosed;
    if (closed) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000)))]);
      clearTimeout(timer);
    }
    const tail = this.shared ? undefined : this.stderrTail.at(-1);
    const why = tail ?? (err instanceof Error ? err.message : String(err));
    const what = this.shared ? `could not use ${this.where}` : `the server (${this.where}) did not start`;
    this.fail(`spec-lsp: ${what}: ${why}. ${this.shared ? SHARED_FIX : FIX}`);
  }

  /** One notification per start attempt, with the fix; the details go to the output channel. */
  private fail(message: string): void {
    this.status.setProblem(message);
    this.output.error(message);
    if (this.failureShown) return;
    this.failureShown = true;
    void vscode.window.showErrorMessage(message, "Open Settings", "Show Log").then((pick) => {
      if (pick === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "specLsp");
      if (pick === "Show Log") this.output.show();
    });
  }

  /** Follows spec-lsp/status while the models load; stops once they are ready, failed or off. */
  private pollStatus(): void {
    clearTimeout(this.statusTimer);
    if (!this.running || !this.client) return;
    this.client.sendRequest<Status>(StatusRequest, {}).then(
      (status) => {
        this.lastStatus = status;
        this.status.setStatus(status);
        if (status.state === "loading") this.statusTimer = setTimeout(() => this.pollStatus(), 1000);
        else this.refreshSoon();
      },
      (err: unknown) => this.output.warn(`spec-lsp/status: ${String(err)}`),
    );
  }

  /** Reads spec-lsp/status and spec-lsp/stats 250 ms after the last call (one pair per pause). */
  private refreshSoon(): void {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => {
      if (!this.running || !this.client) return;
      this.fetch().then(
        () => this.onStats(),
        (err: unknown) => this.output.warn(`spec-lsp/status, spec-lsp/stats: ${String(err)}`),
      );
    }, 250);
  }

  dispose(): void {
    this.completionOffered.dispose();
    this.feedback.dispose();
    this.cursor.dispose();
    void this.stop();
  }
}
