// End-to-end test: the packaged extension in a real VS Code (code-server, offline) talking to the
// real spec-lsp server, driven by Debian's chromium through playwright-core.
//
// It opens a Python file, types, waits for ghost text, accepts it with Tab and checks the saved
// file, then checks the status bar and its menu's stats view, a partial accept, cycling
// alternatives with Alt+] / Alt+[, accepting the next line with Shift+Tab, the menu's per-language
// switch, the manual-only switch (specLsp.autoTrigger), recording (outside the workspace), a
// shared server over TCP with its token, a broken server, and last the workspace's own
// .venv/bin/spec-lsp, which runs only once allowed. The workspace's own settings name a server
// that must not run (machine scope). Every wait is bounded; on failure it saves a screenshot and
// the logs under $SPEC_LSP_E2E_OUT. Exit code 0 on success, 1 on failure.
//
// SPEC_LSP_E2E_SCENARIO=nextedit runs the next-edit scenario instead (runNextEdit): the server on
// the preset file SPEC_LSP_E2E_PRESET_FILE (tests/nextedit/fake_rewriter.py's deterministic
// rewriter), a rename typed on line 1, its follow-up shown on line 2, Tab to jump and Tab to apply,
// the next one dismissed with Escape.
//
// Environment (tests/editors/test_vscode_e2e.py sets it from editors/vscode/.setup.json):
//   SPEC_LSP_CODE_SERVER, SPEC_LSP_CHROMIUM, SPEC_LSP_VSIX, SPEC_LSP_SERVER (spec-lsp executable),
//   SPEC_LSP_E2E_OUT (artefacts), SPEC_LSP_E2E_PRESET (default tiny),
//   SPEC_LSP_E2E_SCREENSHOT (also copy the ghost-text screenshot there), SPEC_LSP_E2E_TIMEOUT_S (480).
import * as cp from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

const CODE_SERVER = need("SPEC_LSP_CODE_SERVER");
const CHROMIUM = need("SPEC_LSP_CHROMIUM");
const VSIX = need("SPEC_LSP_VSIX");
const SERVER = need("SPEC_LSP_SERVER");
const OUT = need("SPEC_LSP_E2E_OUT");
const PRESET = process.env.SPEC_LSP_E2E_PRESET ?? "tiny";
/** "ghost" (everything above) or "nextedit" (runNextEdit, on SPEC_LSP_E2E_PRESET_FILE). */
const SCENARIO = process.env.SPEC_LSP_E2E_SCENARIO ?? "ghost";
const PRESET_FILE = process.env.SPEC_LSP_E2E_PRESET_FILE;
const SCREENSHOT = process.env.SPEC_LSP_E2E_SCREENSHOT;
const TIMEOUT_S = Number(process.env.SPEC_LSP_E2E_TIMEOUT_S ?? "480");
/** Waits that depend on the model: a real one on a busy 2-core machine takes seconds a token. */
const SLOW = PRESET !== "tiny";
const READY_S = SLOW ? 180 : 120;
const GHOST_S = SLOW ? 180 : 90;

const t0 = Date.now();
const phases: Record<string, number> = {};
function log(msg: string): void {
  console.log(`[e2e ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${msg}`);
}
async function phase<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const start = Date.now();
  log(`${name} ...`);
  const out = await fn();
  phases[name] = (Date.now() - start) / 1000;
  return out;
}

/** NBSPs from the DOM and trailing spaces of rendered lines, normalized away. */
function clean(s: string): string {
  return s.replace(/\u00a0/g, " ").replace(/\u200b/g, "");
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns a value (not undefined) or `seconds` pass. */
async function until<T>(what: string, seconds: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${seconds} s waiting for ${what}${last instanceof Error ? `: ${last.message}` : ""}`);
    await sleep(250);
  }
}

/**
 * Runs a UI action and then waits for its effect, up to `tries` times: a click or key press that
 * the window swallowed (a toast, a focus change, a slow extension host) is done again, while the
 * condition it must bring about stays the same.
 */
async function retry<T>(what: string, tries: number, attempt: (i: number) => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt(i);
    } catch (err) {
      if (i >= tries) throw err;
      log(`${what}: try ${i} of ${tries} failed (${err instanceof Error ? err.message.split("\n")[0] : String(err)}); again`);
    }
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

// --- the world the editor sees -------------------------------------------------------------------

const SOURCE = `"""Small statistics helpers."""

import math


def mean(values):
    """Return the arithmetic mean of values."""
    return sum(values) / len(values)


`;
/** The next-edit scenario's file: a rename of `width` on line 1 makes the server suggest the rest. */
const GEOMETRY = `def area(width, height):
    return width * height


def perimeter(width, height):
    return 2 * (width + height)
`;
/** The typed text for the preset: the random-weight tiny model stops at the word before a typed
 * space, since it rarely writes the space a prompt leaves out after code (`prompt.typed_lead`:
 * a completion that does not begin with it is dropped); the real models type on. */
function typedFor(text: string): string {
  return SLOW ? text : text.replace(/ +$/, "");
}
/** Typed at the end of SOURCE, character by character, as a person would. */
const TYPED = typedFor("def variance(values):\n    m = mean(values)\n    return ");
/** Typed in a new function to take its first line with Shift+Tab (one a try). */
const LINE_TYPED = ["\n\n\ndef head(values):\n    first = ", "\n\n\ndef tail(values):\n    last = "].map(typedFor);
/** Typed with specLsp.autoTrigger false (one a try): nothing is asked until spec-lsp: Suggest here. */
const MANUAL_TYPED = ["\n\n\ndef middle(values):\n    return ", "\n\n\ndef mode(values):\n    return "].map(typedFor);
/** Typed in a new function to cycle its alternatives with Alt+] / Alt+[ (one a try). */
const CYCLE_TYPED = ["\n\n\ndef total(values):\n    return ", "\n\n\ndef count(values):\n    n = "].map(typedFor);
/** Typed after the accepted suggestion, to take part of the next one with Ctrl+Right (one a try). */
const PARTIAL_TYPED = [
  "\n\n\ndef stdev(values):\n    return math.",
  "\n\n\ndef pstdev(values):\n    return math.",
  "\n\n\ndef spread(values):\n    return max(values) - ",
].map(typedFor);

function settings(out: string): object {
  return {
    "specLsp.serverPath": SERVER,
    ...(SCENARIO === "nextedit"
      ? // The preset file names the fake rewriter; specLsp.preset unset, so the server keeps it.
        { "specLsp.serverArgs": ["--log-file", path.join(out, "spec-lsp-server.log"), "--preset", PRESET_FILE], "specLsp.nextEditIdleMs": 300 }
      : { "specLsp.serverArgs": ["--log-file", path.join(out, "spec-lsp-server.log")], "specLsp.preset": PRESET }),
    // The definitions scenario: the server logs each spec-lsp/definitions it keeps (DEBUG).
    ...(SCENARIO === "definitions"
      ? { "specLsp.serverArgs": ["--log-file", path.join(out, "spec-lsp-server.log"), "--log-level", "DEBUG"], "specLsp.editorDefinitions": true }
      : {}),
    "specLsp.device": "cpu",
    // A clean window: no chat panel or welcome page to steal the keyboard, no network.
    "chat.disableAIFeatures": true,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "workbench.enableExperiments": false,
    "security.workspace.trust.enabled": false,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": false,
    "extensions.autoUpdate": false,
    "extensions.ignoreRecommendations": true,
    "git.enabled": false,
    // Only ghost text may answer Tab: no suggest widget, no auto-closing or auto-indenting.
    "editor.inlineSuggest.enabled": true,
    "editor.quickSuggestions": { other: "off", comments: "off", strings: "off" },
    "editor.suggestOnTriggerCharacters": false,
    "editor.wordBasedSuggestions": "off",
    "editor.parameterHints.enabled": false,
    "editor.autoClosingBrackets": "never",
    "editor.autoClosingQuotes": "never",
    "editor.autoIndent": "none",
    "editor.minimap.enabled": false,
    "files.autoSave": "off",
    "window.zoomLevel": 0.5,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
  };
}

/**
 * Writes the user's settings. The machine-scoped ones (the server's path and arguments) also go to
 * code-server's machine settings, where VS Code reads them in a remote window such as code-server's.
 */
function writeSettings(user: string, values: object): void {
  fs.mkdirSync(path.join(user, "User"), { recursive: true });
  fs.mkdirSync(path.join(user, "Machine"), { recursive: true });
  fs.writeFileSync(path.join(user, "User", "settings.json"), JSON.stringify(values, null, 2));
  const machine = Object.fromEntries(Object.entries(values).filter(([k]) => MACHINE.includes(k)));
  fs.writeFileSync(path.join(user, "Machine", "settings.json"), JSON.stringify(machine, null, 2));
}
const MACHINE = ["specLsp.serverPath", "specLsp.serverArgs", "specLsp.server.address", "specLsp.server.tokenFile", "specLsp.recordDirectory"];

// --- processes -----------------------------------------------------------------------------------

let codeServer: cp.ChildProcess | undefined;
/** A shared `spec-lsp serve --tcp` for the shared-server phase. */
let sharedServer: cp.ChildProcess | undefined;

/** $XDG_RUNTIME_DIR for code-server (so the extension) and the shared server: where its token goes. */
function runtimeDir(): string {
  const dir = path.join(tmp, "run");
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** Starts `spec-lsp serve --tcp 127.0.0.1:0`, which writes its token under runtimeDir(); its address. */
async function startSharedServer(logFile: string): Promise<string> {
  const args = ["serve", "--tcp", "127.0.0.1:0", "--preset", PRESET, "--device", "cpu", "--log-file", logFile];
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_RUNTIME_DIR: runtimeDir() };
  delete env.SPEC_LSP_TOKEN; // the server makes a token and writes it where the extension looks
  const child = cp.spawn(SERVER, args, { env, stdio: ["ignore", "ignore", "pipe"] });
  sharedServer = child;
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  return until("the shared server to listen", 60, () => {
    if (child.exitCode !== null) throw new Error(`spec-lsp serve --tcp exited ${child.exitCode}: ${stderr}`);
    return Promise.resolve(/listening on (\S+)/.exec(stderr)?.[1]);
  });
}
let context: BrowserContext | undefined;
let page: Page | undefined;
let tmp = "";

/** code-server runs in its own process group (spec-lsp and the extension host with it): end it all. */
async function stopCodeServer(): Promise<void> {
  const child = codeServer;
  codeServer = undefined;
  if (!child?.pid) return;
  const gone = new Promise<void>((r) => (child.exitCode !== null ? r() : child.once("exit", () => r())));
  const kill = (sig: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, sig);
    } catch {
      /* already gone */
    }
  };
  kill("SIGTERM");
  await Promise.race([gone, new Promise((r) => setTimeout(r, 5000))]);
  kill("SIGKILL"); // stragglers in the group (one SIGTERM does not always end everything)
}

function runChecked(cmd: string, args: string[], env: NodeJS.ProcessEnv, seconds: number): string {
  const r = cp.spawnSync(cmd, args, { env, encoding: "utf8", timeout: seconds * 1000 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (${r.status ?? r.signal}): ${r.stdout}${r.stderr}`);
  return r.stdout;
}

async function startCodeServer(): Promise<string> {
  const user = path.join(tmp, "user-data");
  const exts = path.join(tmp, "extensions");
  const workspace = path.join(tmp, "workspace");
  fs.mkdirSync(path.join(user, "User"), { recursive: true });
  fs.mkdirSync(workspace, { recursive: true });
  writeSettings(user, settings(OUT));
  fs.writeFileSync(path.join(workspace, "stats.py"), SOURCE);
  if (SCENARIO === "nextedit") fs.writeFileSync(path.join(workspace, "geometry.py"), GEOMETRY);
  // A repository's own settings that would run its code or write into it: the extension must
  // ignore them (machine-scoped), or the server would not start and nothing below would pass.
  fs.mkdirSync(path.join(workspace, ".vscode"), { recursive: true });
  const evil = path.join(workspace, "evil.sh");
  fs.writeFileSync(evil, '#!/bin/sh\ntouch "$(dirname "$0")/evil-ran"\nexit 1\n', { mode: 0o755 });
  // The repository's own server: it may run only once the user allows it (the last phase).
  fs.mkdirSync(path.join(workspace, ".venv", "bin"), { recursive: true });
  const venvServer = '#!/bin/sh\ntouch "$(dirname "$0")/../../venv-ran"\necho "the workspace server ran" >&2\nexit 1\n';
  fs.writeFileSync(path.join(workspace, ".venv", "bin", "spec-lsp"), venvServer, { mode: 0o755 });
  fs.writeFileSync(
    path.join(workspace, ".vscode", "settings.json"),
    JSON.stringify({ "specLsp.serverPath": evil, "specLsp.serverArgs": ["--evil"], "specLsp.recordDirectory": "${workspaceFolder}/rec" }),
  );
  const config = path.join(tmp, "config.yaml");
  fs.writeFileSync(config, "auth: none\ncert: false\n");
  // code-server needs the Node it was built for (ours runs this script) first on PATH.
  // No spec-lsp on PATH, so that with serverPath empty only the workspace's .venv is left.
  const pathDirs = (process.env.PATH ?? "").split(path.delimiter).filter((d) => d && !fs.existsSync(path.join(d, "spec-lsp")));
  const env = { ...process.env, PATH: [path.dirname(process.execPath), ...pathDirs].join(path.delimiter), XDG_RUNTIME_DIR: runtimeDir() };
  const dirs = ["--config", config, "--user-data-dir", user, "--extensions-dir", exts];
  runChecked(CODE_SERVER, [...dirs, "--install-extension", VSIX, "--force"], env, 120);
  // The definitions scenario's second language server (tests/editors/vscode_fake_definitions).
  const fakeVsix = process.env.SPEC_LSP_E2E_FAKE_VSIX;
  if (fakeVsix) runChecked(CODE_SERVER, [...dirs, "--install-extension", fakeVsix, "--force"], env, 120);

  const port = await freePort();
  const logFile = fs.openSync(path.join(OUT, "code-server.log"), "w");
  codeServer = cp.spawn(
    CODE_SERVER,
    [
      ...dirs,
      "--bind-addr",
      `127.0.0.1:${port}`,
      "--auth",
      "none",
      "--disable-telemetry",
      "--disable-update-check",
      "--disable-workspace-trust",
      "--disable-getting-started-override",
      "--ignore-last-opened",
      workspace,
    ],
    { env, detached: true, stdio: ["ignore", logFile, logFile] },
  );
  fs.writeFileSync(path.join(OUT, "code-server.pgid"), String(codeServer.pid));
  const url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`;
  await until("code-server to answer HTTP", 90, async () => {
    if (codeServer?.exitCode !== null) throw new Error(`code-server exited with ${codeServer?.exitCode}`);
    const res = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined);
    return res?.ok ? true : undefined;
  });
  return url;
}

// --- the editor ----------------------------------------------------------------------------------

/** The extension's status bar item (VS Code prefixes the item id with the extension id). */
const STATUS_ITEM = '.statusbar-item[id$="spec-lsp.status"]';

async function statusText(p: Page): Promise<string> {
  return clean(await p.locator(STATUS_ITEM).innerText({ timeout: 1000 })).trim();
}

/** The ghost text on the cursor's line: VS Code highlights it, so it comes as several spans. */
async function ghostLine(p: Page): Promise<string> {
  const spans = await p.locator(".view-line .ghost-text-decoration").allTextContents();
  return clean(spans.join(""));
}

/** Waits for ghost text that stays the same for half a second (a newer answer may replace the first). */
async function stableGhost(p: Page, what: string): Promise<string> {
  let previous = "";
  return until(what, GHOST_S, async () => {
    const text = await ghostLine(p);
    const seen = previous;
    previous = text;
    if (!text.trim() || text !== seen) {
      await sleep(250); // with until's own pause: polls half a second apart
      return undefined;
    }
    return text;
  });
}

async function openFile(p: Page, name: string): Promise<void> {
  await p.locator(".monaco-workbench").waitFor({ timeout: 120_000 });
  await until(`${name} open in an editor`, 60, async () => {
    const tab = p.locator(".tab", { hasText: name }).first();
    if (await tab.isVisible()) {
      await tab.click();
      await p.locator(".tab.active", { hasText: name }).waitFor({ timeout: 10_000 });
      return true;
    }
    await p.keyboard.press("Control+P");
    const input = p.locator(".quick-input-widget input").first();
    await input.waitFor({ state: "visible", timeout: 5000 });
    await input.fill(name);
    await p.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().click({ timeout: 10_000 });
    await p.locator(".tab.active", { hasText: name }).waitFor({ timeout: 10_000 });
    return true;
  });
}

/** Runs a command from the command palette by its title. */
async function runCommand(p: Page, title: string): Promise<void> {
  await p.keyboard.press("F1");
  await p.locator(".quick-input-widget input").first().fill(`>${title}`);
  await p.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().click({ timeout: 10_000 });
}

/** Waits until the status bar says the server answered and the model is ready. */
async function waitReady(p: Page): Promise<string> {
  return until("the status bar to say the model is ready", READY_S, async () => {
    const text = await statusText(p);
    if (/failed|error/i.test(text)) throw new Error(`status bar says: ${text}`);
    return text.includes(`spec-lsp ${PRESET}`) ? text : undefined;
  });
}

/** The text of the active editor's visible lines, one string per line. */
async function editorLines(p: Page): Promise<string[]> {
  const lines = p.locator(".editor-group-container.active .monaco-editor .view-lines .view-line");
  const texts = await lines.allInnerTexts();
  return texts.map(clean);
}

/** Clicks the status bar item and picks the menu entry whose label contains `entry`. */
async function menu(p: Page, entry: string): Promise<void> {
  await p.locator(STATUS_ITEM).click({ timeout: 10_000 });
  await p.locator(".quick-input-list .monaco-list-row", { hasText: entry }).first().click({ timeout: 10_000 });
}

/**
 * Opens the stats view from the status bar's menu until one of its lines matches `want`. Each
 * opening fetches the stats again, so a count that reached the server after the view was drawn
 * shows up.
 */
async function statsViewWith(p: Page, what: string, want: RegExp): Promise<string[]> {
  return retry(`the stats view to list ${what}`, 3, async () => {
    await menu(p, "Show stats");
    await p.locator(".tab.active", { hasText: "spec-lsp stats" }).waitFor({ timeout: 20_000 });
    return until(`the stats view to list ${what}`, 15, async () => {
      const lines = await editorLines(p);
      return lines.some((l) => want.test(l)) ? lines : undefined;
    });
  });
}

/** The requests the server counted, from the stats view. */
async function requestCount(p: Page): Promise<number> {
  const lines = await statsViewWith(p, "the requests", /^\s*requests\s+\d+$/);
  return Number(/\d+/.exec(lines.find((l) => /^\s*requests\s+\d+$/.test(l)) ?? "")?.[0]);
}

/** The user settings file, as VS Code keeps it (the extension's updates land here). */
function userSettings(): Record<string, unknown> {
  return JSON.parse(fs.readFileSync(path.join(tmp, "user-data", "User", "settings.json"), "utf8")) as Record<string, unknown>;
}

/** The recorded session files in the extension's global storage (its default record directory). */
function sessionFiles(): string[] {
  const dir = path.join(tmp, "user-data", "User", "globalStorage", "spec-lsp.spec-lsp", "sessions");
  return fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(dir, f)) : [];
}

/** How many keystrokes (didChange notifications) the single recorded session holds so far. */
function recordedChanges(): number | undefined {
  const files = sessionFiles();
  if (files.length !== 1) return undefined;
  return fs.readFileSync(files[0], "utf8").split("\n").filter((l) => l.includes("textDocument/didChange")).length;
}

interface Cycle {
  /** The ghost text typing brought (an automatic request: one item). */
  first: string;
  /** After Alt+] (showNext: an explicit request, up to 3 items), then Alt+[, then Alt+] again. */
  next: string;
  previous: string;
  /** Shown again by the last Alt+]; Tab inserts it. */
  nextAgain: string;
}

interface Result {
  ghost: string;
  /** The ghost text's first line, and the line Shift+Tab left in the file. */
  nextLine: { ghost: string; line: string };
  /** specLsp.enabledLanguages after the menu's "Disable for python", and after "Enable for python". */
  languageSwitch: unknown[];
  /** The first lines of the menu's preset list. */
  presets: string[];
  /** Requests the server counted for typing with autoTrigger off, then Suggest here (1), and its ghost. */
  manual: { asked: number; ghost: string };
  /** The shared server phase: its address, the ghost text it gave, whether its token was logged. */
  shared: { address: string; ghost: string; tokenInLog: boolean };
  /** The question asked before the workspace's own server ran, and whether it ran before the answer. */
  venvConsent: { question: string; ranBeforeAnswer: boolean };
  /** What the workspace's own settings left in the workspace (nothing, they are ignored). */
  workspaceLeftovers: string[];
  statusBar: string;
  statsLines: string[];
  partialLines: string[];
  cycle: Cycle;
  session: string;
  failure: string;
}

/** Starts code-server and chromium and loads the workbench: the page and the workbench's URL. */
async function openWorkbench(): Promise<{ p: Page; url: string }> {
  fs.mkdirSync(OUT, { recursive: true });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "spec-lsp-vscode-e2e-"));
  const url = await phase("install the .vsix and start code-server", startCodeServer);

  context = await phase("start chromium", () =>
    chromium.launchPersistentContext(path.join(tmp, "chromium"), {
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
      viewport: { width: 1100, height: 640 },
    }),
  );
  const p = context.pages()[0] ?? (await context.newPage());
  page = p;
  p.setDefaultTimeout(30_000);
  await phase("load the workbench", async () => {
    await p.goto(url, { timeout: 120_000 });
    await p.locator(".monaco-workbench").waitFor({ timeout: 120_000 });
  });
  return { p, url };
}

async function run(): Promise<Result> {
  const { p, url } = await openWorkbench();
  await phase("open stats.py", () => openFile(p, "stats.py"));
  // The extension starts spec-lsp on start-up; typing before the client runs would be lost on it.
  const ready = await phase("wait for the language client and the model", () => waitReady(p));
  log(`status bar: ${ready}`);

  const ghost = await phase("type and wait for ghost text", async () => {
    await p.locator(".editor-group-container.active .monaco-editor .view-lines").click();
    await p.keyboard.press("Control+End");
    await p.keyboard.type(TYPED, { delay: 40 });
    return stableGhost(p, "ghost text (.ghost-text-decoration)");
  });
  log(`ghost text: ${JSON.stringify(ghost)}`);
  const shot = path.join(OUT, "vscode-ghost-text.png");
  await p.screenshot({ path: shot });
  if (SCREENSHOT) fs.copyFileSync(shot, SCREENSHOT);

  await phase("accept with Tab and save", async () => {
    await p.keyboard.press("Tab");
    // The server may suggest a continuation at once; Escape dismisses it so the save is all we did.
    await p.keyboard.press("Escape");
    await p.keyboard.press("Control+S");
    const file = path.join(tmp, "workspace", "stats.py");
    const expected = SOURCE + TYPED + ghost;
    await until(`stats.py on disk to start with what was typed plus the ghost text ${JSON.stringify(ghost)}`, 15, () =>
      Promise.resolve(fs.readFileSync(file, "utf8").startsWith(expected) ? true : undefined),
    );
  });

  const statusBar = await phase("status bar shows latency and acceptance", () =>
    until("the status bar to count the accepted suggestion", 30, async () => {
      const text = await statusText(p);
      return /\d+ ms · [1-9]\d*\/\d+ accepted/.test(text) ? text : undefined;
    }),
  );
  log(`status bar: ${statusBar}`);

  const statsLines = await phase("stats view from the status bar", () =>
    statsViewWith(p, "an accepted suggestion", /^\s*accepted\s+[1-9]\d*$/),
  );
  await p.screenshot({ path: path.join(OUT, "vscode-stats.png") });

  // Type a new function, wait for its ghost text and take its first words with Ctrl+Right (accept
  // next word), waiting after each press for the ghost text to move on. The stats view must then
  // count a partial accept. Should it not, the whole action is done again in another new function
  // (the suggestion may have been replaced between the presses); the check is never relaxed.
  const partialLines = await phase("accept the next word with Ctrl+Right; the stats view counts it", () =>
    retry("a partial accept", PARTIAL_TYPED.length, async (i) => {
      await openFile(p, "stats.py");
      await p.keyboard.press("Control+End");
      await p.keyboard.type(PARTIAL_TYPED[i - 1], { delay: 40 });
      const next = await stableGhost(p, "ghost text in a new function");
      log(`ghost text before Ctrl+Right: ${JSON.stringify(next)}`);
      // A one-character step (a leading space) looks like typing to the extension, so take two words.
      for (let step = 0; step < 2; step++) {
        const before = await ghostLine(p);
        if (!before.trim()) break; // all of it taken: nothing left to accept
        await p.keyboard.press("Control+ArrowRight");
        await until("Ctrl+Right to take a word of the ghost text", 15, async () =>
          (await ghostLine(p)) !== before ? true : undefined,
        );
      }
      await p.keyboard.press("Escape");
      return statsViewWith(p, "a partial accept", /^\s*partially accepted\s+[1-9]\d*$/);
    }),
  );

  // VS Code's own cycling: showNext (Alt+]) asks again with triggerKind Invoked, which the server
  // answers with up to 3 distinct items, and shows the second; showPrevious (Alt+[) the first.
  const cycle = await phase("cycle the alternatives with Alt+] / Alt+[ and accept the second", () =>
    retry("cycling", CYCLE_TYPED.length, async (i) => {
      await openFile(p, "stats.py");
      await p.keyboard.press("Control+End");
      await p.keyboard.type(CYCLE_TYPED[i - 1], { delay: 40 });
      const first = await stableGhost(p, "ghost text to cycle from");
      /** Presses `key`, then waits for ghost text other than `from` (or equal to `want`). */
      const press = async (key: string, from: string, want?: string): Promise<string> => {
        await p.keyboard.press(key);
        return until(`${key} to show ${want === undefined ? "another" : "the first"} suggestion`, 30, async () => {
          const text = await ghostLine(p);
          if (!text.trim() || text === from) return undefined;
          return want === undefined || text === want ? text : undefined;
        });
      };
      const next = await press("Alt+BracketRight", first);
      const previous = await press("Alt+BracketLeft", next, first);
      const nextAgain = await press("Alt+BracketRight", previous, next);
      log(`cycled: ${JSON.stringify({ first, next, previous, nextAgain })}`);
      const file = path.join(tmp, "workspace", "stats.py");
      await p.keyboard.press("Tab");
      await p.keyboard.press("Escape");
      await p.keyboard.press("Control+S");
      const expected = CYCLE_TYPED[i - 1] + nextAgain;
      await until(`stats.py on disk to hold the second suggestion ${JSON.stringify(nextAgain)}`, 15, () =>
        Promise.resolve(fs.readFileSync(file, "utf8").includes(expected) ? true : undefined),
      );
      return { first, next, previous, nextAgain };
    }),
  );

  const nextLine = await phase("accept the next line with Shift+Tab", () =>
    retry("accepting the next line", LINE_TYPED.length, async (i) => {
      await openFile(p, "stats.py");
      await p.keyboard.press("Control+End");
      await p.keyboard.type(LINE_TYPED[i - 1], { delay: 40 });
      const ghost = await stableGhost(p, "ghost text to take a line of");
      await p.keyboard.press("Shift+Tab");
      await p.keyboard.press("Escape");
      await p.keyboard.press("Control+S");
      const file = path.join(tmp, "workspace", "stats.py");
      const typedLine = LINE_TYPED[i - 1].split("\n").at(-1) ?? "";
      const line = await until(`stats.py to hold the typed line plus the ghost's first line ${JSON.stringify(ghost)}`, 15, () => {
        const text = fs.readFileSync(file, "utf8");
        const last = text.slice(text.lastIndexOf(LINE_TYPED[i - 1]) + LINE_TYPED[i - 1].length - typedLine.length).split("\n")[0];
        return Promise.resolve(last === typedLine + ghost ? last : undefined);
      });
      return { ghost, line };
    }),
  );

  const languageSwitch = await phase("the menu switches python off and on (specLsp.enabledLanguages)", async () => {
    await openFile(p, "stats.py");
    const seen: unknown[] = [];
    for (const [entry, want] of [["Disable for python", '["*","!python"]'], ["Enable for python", '["*"]']] as const) {
      await retry(entry, 3, async () => {
        await menu(p, entry);
        seen.push(
          await until(`enabledLanguages ${want} in the user settings`, 15, () => {
            const value = userSettings()["specLsp.enabledLanguages"];
            return Promise.resolve(JSON.stringify(value) === want ? value : undefined);
          }),
        );
      });
      await openFile(p, "stats.py"); // the menu leaves the focus on the editor, make sure of it
    }
    return seen;
  });

  // The menu's "Pick a preset…" lists what `spec-lsp models list` knows; Escape leaves it as it was.
  const presets = await phase("the menu lists the presets to pick from", async () => {
    await openFile(p, "stats.py");
    await menu(p, "Pick a preset");
    const rows = p.locator(".quick-input-widget .quick-input-list .monaco-list-row");
    const names = await until("the preset list", 60, async () => {
      const texts = (await rows.allInnerTexts()).map(clean);
      return texts.some((t) => t.startsWith("coder")) && texts.some((t) => t.startsWith("bundled")) ? texts : undefined;
    });
    await p.keyboard.press("Escape");
    return names.map((t) => t.split("\n")[0]);
  });

  // Typing with autoTrigger off (the menu's "Suggest only on request") asks nothing, and
  // "spec-lsp: Suggest here" asks once: the server counts exactly one request.
  const manual = await phase("with autoTrigger off only spec-lsp: Suggest here asks", async () => {
    await menu(p, "Suggest only on request");
    await until("autoTrigger false in the user settings", 15, () => Promise.resolve(userSettings()["specLsp.autoTrigger"] === false ? true : undefined));
    const result = await retry("a manual request", MANUAL_TYPED.length, async (i) => {
      const before = await requestCount(p);
      await openFile(p, "stats.py");
      await p.keyboard.press("Control+End");
      await p.keyboard.type(MANUAL_TYPED[i - 1], { delay: 40 });
      await runCommand(p, "spec-lsp: Suggest here");
      const ghost = await stableGhost(p, "ghost text after spec-lsp: Suggest here");
      await p.keyboard.press("Escape");
      const asked = (await requestCount(p)) - before;
      if (asked !== 1) throw new Error(`typing and spec-lsp: Suggest here made ${asked} requests, not 1`);
      return { asked, ghost };
    });
    await menu(p, "Suggest while typing");
    await until("autoTrigger true in the user settings", 15, () => Promise.resolve(userSettings()["specLsp.autoTrigger"] === true ? true : undefined));
    return result;
  });

  const session = await phase("record a session through spec-lsp record", async () => {
    await runCommand(p, "spec-lsp: Record a typing session");
    await waitReady(p);
    await openFile(p, "stats.py");
    await p.keyboard.press("Control+End");
    const typed = "\n# the end\n";
    const KEYSTROKES = "# the end".length; // the client may merge a newline with its neighbour
    await p.keyboard.type(typed, { delay: 40 });
    // The recorder writes each message as it passes: stop once every keystroke is in the file.
    await until("the recorder to write every keystroke", 30, () =>
      Promise.resolve((recordedChanges() ?? 0) >= KEYSTROKES ? true : undefined),
    );
    await runCommand(p, "spec-lsp: Record a typing session"); // stops: the server restarts plain
    await waitReady(p);
    return until("a recorded session with the typing in it", 20, () => {
      const files = sessionFiles();
      if (files.length !== 1) return Promise.resolve(undefined);
      const lines = fs.readFileSync(files[0], "utf8").split("\n").filter((l) => l.trim());
      const header = JSON.parse(lines[0] ?? "{}") as { format?: string };
      const enough = (recordedChanges() ?? 0) >= KEYSTROKES;
      return Promise.resolve(header.format === "spec-lsp-session" && enough ? `${path.basename(files[0])}: ${lines.length} lines` : undefined);
    });
  });
  log(`session: ${session}`);

  // One server for several windows: `spec-lsp serve --tcp` started apart, the extension pointed at
  // it by specLsp.server.address alone (its token read from the file the server wrote).
  const shared = await phase("connect to a shared server (spec-lsp serve --tcp) with its token", async () => {
    const logFile = path.join(OUT, "shared-server.log");
    const address = await startSharedServer(logFile);
    // A fresh window reads the new settings (a settings file written behind VS Code's back may
    // not be noticed at once).
    await p.goto("about:blank");
    writeSettings(path.join(tmp, "user-data"), { ...userSettings(), ...settings(OUT), "specLsp.server.address": address });
    await p.goto(url, { timeout: 120_000 });
    await p.locator(".monaco-workbench").waitFor({ timeout: 120_000 });
    await openFile(p, "stats.py");
    await until("the shared server to take the extension's connection", 60, () =>
      Promise.resolve(fs.existsSync(logFile) && /client \S+ connected/.test(fs.readFileSync(logFile, "utf8")) ? true : undefined),
    );
    await waitReady(p);
    await openFile(p, "stats.py");
    await p.keyboard.press("Control+End");
    // The first phase's context, where every preset's model has something to suggest.
    await p.keyboard.type(typedFor("\n\n\ndef dispersion(values):\n    m = mean(values)\n    return "), { delay: 40 });
    const ghost = await stableGhost(p, "ghost text from the shared server");
    await p.keyboard.press("Escape");
    const token = fs.readFileSync(path.join(runtimeDir(), "spec-lsp", `${address.split(":").at(-1)}.token`), "utf8").trim();
    const leaked = fs.readFileSync(logFile, "utf8").includes(token);
    return { address, ghost, tokenInLog: leaked };
  });
  log(`shared server: ${JSON.stringify(shared)}`);

  const failure = await phase("a broken server gives one notification with the fix", async () => {
    const broken = path.join(tmp, "broken-spec-lsp");
    fs.writeFileSync(broken, '#!/bin/sh\necho "ImportError: pretend the venv is broken" >&2\nexit 1\n', { mode: 0o755 });
    // Close the window, break the setting, open a fresh window: as after an install gone wrong.
    await p.goto("about:blank");
    writeSettings(path.join(tmp, "user-data"), { ...settings(OUT), "specLsp.serverPath": broken });
    await p.goto(url, { timeout: 120_000 });
    await p.locator(".monaco-workbench").waitFor({ timeout: 120_000 });
    const toasts = p.locator(".notification-toast", { hasText: "spec-lsp" });
    const first = await until("an error notification about the server", 60, async () => {
      const texts = (await toasts.allInnerTexts()).map(clean);
      return texts.length ? texts : undefined;
    });
    await sleep(3000); // a second notification would have come by now
    const texts = (await toasts.allInnerTexts()).map(clean);
    if (texts.length !== 1) throw new Error(`expected one notification, got ${JSON.stringify(texts)}`);
    if (!/pretend the venv is broken/.test(texts[0]) || !/Fix:/.test(texts[0])) {
      throw new Error(`the notification lacks the cause or the fix: ${texts[0]}`);
    }
    await p.screenshot({ path: path.join(OUT, "vscode-broken-server.png") });
    return first[0];
  });
  log(`notification: ${JSON.stringify(failure)}`);
  const workspaceLeftovers = fs.readdirSync(path.join(tmp, "workspace")).filter((f) => !["stats.py", ".vscode", ".venv", "evil.sh"].includes(f));

  // serverPath empty and no spec-lsp on PATH: the workspace's .venv/bin/spec-lsp is the only one
  // left, and the extension asks before running it; it runs once "Run it" is clicked.
  const venvConsent = await phase("a workspace's own .venv runs only once allowed", async () => {
    const marker = path.join(tmp, "workspace", "venv-ran");
    await p.goto("about:blank");
    writeSettings(path.join(tmp, "user-data"), { ...settings(OUT), "specLsp.serverPath": "" });
    await p.goto(url, { timeout: 120_000 });
    await p.locator(".monaco-workbench").waitFor({ timeout: 120_000 });
    const toast = p.locator(".notification-toast", { hasText: "has its own spec-lsp" });
    const question = clean(await until("the question about the workspace's server", 60, async () => ((await toast.count()) ? toast.first().innerText() : undefined)));
    const ranBeforeAnswer = fs.existsSync(marker);
    await toast.first().getByRole("button", { name: "Run it", exact: true }).click();
    await until("the allowed workspace server to run", 30, () => Promise.resolve(fs.existsSync(marker) ? true : undefined));
    return { question, ranBeforeAnswer };
  });
  log(`workspace .venv: ${JSON.stringify(venvConsent)}`);
  return { ghost, nextLine, languageSwitch, presets, manual, shared, workspaceLeftovers, venvConsent, statusBar, statsLines, partialLines, cycle, session, failure };
}

// --- next edits (SPEC_LSP_E2E_SCENARIO=nextedit) ---------------------------------------------------

/**
 * The struck-through text in the active editor (the next edit's old text), one string per line
 * that has some: computed styles, since decorations carry generated class names.
 */
async function struckText(p: Page): Promise<string[]> {
  return p.evaluate<string[]>(`(() => {
    const root = document.querySelector(".editor-group-container.active .monaco-editor .view-lines");
    if (!root) return [];
    const byLine = new Map();
    for (const span of root.querySelectorAll(".view-line span")) {
      if (span.children.length || !getComputedStyle(span).textDecorationLine.includes("line-through")) continue;
      const line = span.closest(".view-line");
      const top = line ? parseFloat(line.style.top || "0") : 0;
      byLine.set(top, (byLine.get(top) || "") + span.textContent);
    }
    return [...byLine.entries()].sort((a, b) => a[0] - b[0]).map(([, text]) => text.replace(/\u00a0/g, " "));
  })()`);
}

/** The text that decorations add to the active editor's lines (CSS ::before / ::after content). */
async function decorationTexts(p: Page): Promise<string[]> {
  return p.evaluate<string[]>(`(() => {
    const root = document.querySelector(".editor-group-container.active .monaco-editor .view-lines");
    if (!root) return [];
    const out = [];
    for (const el of root.querySelectorAll(".view-line span")) {
      for (const pseudo of ["::before", "::after"]) {
        const content = getComputedStyle(el, pseudo).content;
        if (content && content !== "none" && content !== "normal") out.push(JSON.parse(content).replace(/\u00a0/g, " "));
      }
    }
    return out;
  })()`);
}

/** VS Code's cursor position item in the status bar ("Ln 2, Col 12"). */
async function cursorText(p: Page): Promise<string> {
  return clean(await p.locator('.statusbar-item[id="status.editor.selection"]').innerText({ timeout: 1000 })).trim();
}

interface NextEditResult {
  /** What the status bar said once the server was ready. */
  ready: string;
  /** The struck-through text of the first next edit (the old `width` on line 2). */
  struck: string[];
  /** Ghost text that came first (hidden with Escape), and whether a next edit showed beside it. */
  ghostSeen: string;
  struckWithGhost: boolean;
  /** The editor's lines while it was shown, and the text decorations added (the new text). */
  shownLines: string[];
  added: string[];
  /** The cursor after the first Tab (it jumped to the edit's line). */
  afterJump: string;
  /** geometry.py on disk after the second Tab. */
  lines: string[];
  /** The next edit shown after the accept: its struck text, the hint on the cursor's line. */
  second: { struck: string[]; hint: string };
  /** geometry.py on disk after Escape dismissed the second edit (unchanged). */
  linesAfterDismiss: string[];
}

async function runNextEdit(): Promise<{ nextEdit: NextEditResult }> {
  if (!PRESET_FILE) throw new Error("SPEC_LSP_E2E_PRESET_FILE is not set (the fake rewriter's preset)");
  const { p } = await openWorkbench();
  const file = path.join(tmp, "workspace", "geometry.py");
  const onDisk = () => fs.readFileSync(file, "utf8").split("\n");
  await phase("open geometry.py", () => openFile(p, "geometry.py"));
  const ready = await phase("wait for the language client and the server", () =>
    until("the status bar to say the server is ready", READY_S, async () => {
      const text = await statusText(p);
      if (/failed|error|engine down/i.test(text)) throw new Error(`status bar says: ${text}`);
      return /^spec-lsp \S/.test(text) && !/starting|loading|\boff\b/.test(text) ? text : undefined;
    }),
  );
  log(`status bar: ${ready}`);

  // Rename `width` to `w` on line 1 by typing: after "def area(w", delete "idth".
  const shown = await phase("rename on line 1 by typing; the next edit shows on line 2", async () => {
    await p.locator(".editor-group-container.active .monaco-editor .view-lines").click();
    await p.keyboard.press("Control+Home");
    for (let i = 0; i < "def area(w".length; i++) await p.keyboard.press("ArrowRight");
    for (let i = 0; i < "idth".length; i++) await p.keyboard.press("Delete", { delay: 40 });
    // The fake answers every completion with ghost text ("pass"): while it shows, no next edit may;
    // Escape hides it (the extension's binding, VS Code's own hide), and then the next edit comes.
    let ghostSeen = "";
    let struckWithGhost = false;
    const struck = await until("a next edit (struck-through text) in the editor, and no ghost text", GHOST_S, async () => {
      const ghost = await ghostLine(p);
      const texts = await struckText(p);
      if (ghost.trim()) {
        ghostSeen = ghost;
        await sleep(500); // a next edit showing up beside the ghost text would be seen now
        if ((await ghostLine(p)).trim() && (await struckText(p)).length) struckWithGhost = true;
        await p.keyboard.press("Escape");
        return undefined;
      }
      return texts.length ? texts : undefined;
    });
    await sleep(300); // let the new text's decoration render for the screenshot
    await p.screenshot({ path: path.join(OUT, "vscode-next-edit.png") });
    return { struck, ghostSeen, struckWithGhost, shownLines: await editorLines(p), added: await decorationTexts(p) };
  });
  log(`next edit shown: ${JSON.stringify(shown)}`);

  const accepted = await phase("Tab jumps to the edit, Tab applies it", async () => {
    await p.keyboard.press("Tab");
    const afterJump = await until("the first Tab to move the cursor to line 2", 20, async () => {
      const text = await cursorText(p);
      return /^Ln 2,/.test(text) ? text : undefined;
    });
    await p.keyboard.press("Tab");
    let saved = 0;
    const lines = await until("geometry.py on disk to hold the accepted edit", 30, async () => {
      const lines = onDisk();
      if (lines[1] === "    return w * height") return lines;
      if (Date.now() - saved > 2000) {
        // The accept is asynchronous: save again until it is in (saving twice changes nothing).
        await p.keyboard.press("Control+S");
        saved = Date.now();
      }
      return undefined;
    });
    return { afterJump, lines };
  });
  log(`after the accept: ${JSON.stringify(accepted)}`);

  // The extension asks again after an accept: the fake rewriter's next `width` comes up.
  const second = await phase("the next edit after the accept; Escape dismisses it", async () => {
    const struck = await until("a second next edit", GHOST_S, async () => {
      const texts = await struckText(p);
      return texts.length ? texts : undefined;
    });
    const hint = (await decorationTexts(p)).find((t) => t.includes("next edit at line")) ?? "";
    await p.screenshot({ path: path.join(OUT, "vscode-next-edit-second.png") });
    await p.keyboard.press("Escape");
    await until("Escape to take the next edit off the screen", 20, async () => ((await struckText(p)).length === 0 ? true : undefined));
    await p.keyboard.press("Control+S");
    await sleep(1000);
    return { struck, hint, linesAfterDismiss: onDisk() };
  });
  log(`second next edit: ${JSON.stringify(second)}`);
  return {
    nextEdit: {
      ready,
      ...shown,
      ...accepted,
      second: { struck: second.struck, hint: second.hint },
      linesAfterDismiss: second.linesAfterDismiss,
    },
  };
}

/** What the definitions scenario saw: spec-lsp's log line for the definitions it kept, and
 * each question the second language server was asked (its JSON lines). */
interface DefinitionsResult {
  kept: string;
  asked: string[];
}

/** `specLsp.editorDefinitions` with a second language server (the fake-definitions extension):
 * typing a call of `rect_area`, which only that server knows, sends its definition to spec-lsp. */
async function runDefinitions(): Promise<{ definitions: DefinitionsResult }> {
  const { p } = await openWorkbench();
  await phase("open stats.py", () => openFile(p, "stats.py"));
  const ready = await phase("wait for the language client and the model", () => waitReady(p));
  log(`status bar: ${ready}`);
  const serverLog = path.join(OUT, "spec-lsp-server.log");
  const kept = await phase("type a call of rect_area; its definition reaches spec-lsp", async () => {
    await p.locator(".editor-group-container.active .monaco-editor .view-lines").click();
    await p.keyboard.press("Control+End");
    await p.keyboard.type("total = rect_area(2, ", { delay: 40 });
    return until("spec-lsp to log the definitions it kept", 60, () => {
      const text = fs.existsSync(serverLog) ? fs.readFileSync(serverLog, "utf8") : "";
      return Promise.resolve(/spec-lsp\/definitions: [1-9]\d* of \d+ definitions kept for \S+/.exec(text)?.[0]);
    });
  });
  const fakeLog = process.env.SPEC_LSP_E2E_FAKE_LOG ?? "";
  const asked = fs.existsSync(fakeLog) ? fs.readFileSync(fakeLog, "utf8").split("\n").filter(Boolean) : [];
  return { definitions: { kept, asked } };
}

/** On failure: what the window looked like, and every log that could say why. */
async function saveEvidence(): Promise<void> {
  try {
    await page?.screenshot({ path: path.join(OUT, "failure.png"), timeout: 10_000 });
  } catch (err) {
    log(`no failure screenshot: ${String(err)}`);
  }
  const html = await page?.content().catch(() => undefined);
  if (html) fs.writeFileSync(path.join(OUT, "failure.html"), html);
  const logs = path.join(tmp, "user-data", "logs");
  const walk = (dir: string): string[] =>
    fs.existsSync(dir)
      ? fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]))
      : [];
  for (const file of walk(logs)) {
    const base = path.basename(file);
    if (/spec-lsp|exthost|remoteagent|sharedprocess/i.test(base)) {
      fs.copyFileSync(file, path.join(OUT, `vscode-${path.basename(path.dirname(file))}-${base}`));
    }
  }
}

async function cleanup(): Promise<void> {
  sharedServer?.kill("SIGTERM");
  sharedServer = undefined;
  await context?.close().catch(() => undefined);
  context = undefined;
  await stopCodeServer();
  if (tmp && !process.env.SPEC_LSP_E2E_KEEP) fs.rmSync(tmp, { recursive: true, force: true });
}

async function main(): Promise<number> {
  let failed = false;
  const onSignal = (sig: string) => {
    log(`got ${sig}: cleaning up`);
    void saveEvidence()
      .then(cleanup)
      .finally(() => process.exit(1));
  };
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  const watchdog = setTimeout(() => onSignal(`no result after ${TIMEOUT_S} s`), TIMEOUT_S * 1000);
  try {
    const result = SCENARIO === "nextedit" ? await runNextEdit() : SCENARIO === "definitions" ? await runDefinitions() : await run();
    const wall = (Date.now() - t0) / 1000;
    console.log(JSON.stringify({ ok: true, wall_s: wall, phases, ...result }));
  } catch (err) {
    failed = true;
    log(`FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    await saveEvidence();
  } finally {
    clearTimeout(watchdog);
    await cleanup();
  }
  log(failed ? `failed; evidence in ${OUT}` : "passed");
  return failed ? 1 : 0;
}

void main().then((code) => process.exit(code));
