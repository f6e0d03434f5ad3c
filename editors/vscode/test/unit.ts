// Unit tests of the extension's pure logic, in plain Node (node:test), without VS Code:
// `npm run unit` after `npm run build`; tests/editors/test_vscode_unit.py runs it under pytest.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import { test } from "node:test";
import type { Stats, Status } from "../src/protocol";
import * as os from "node:os";
import * as path from "node:path";
import { chooseServer, parseAddress, sharedServeArgs, sharedSocket, tokenSource } from "../src/serverChoice";
import { connectOrStart } from "../src/sharedStart";
import { type Inspected, languageOn, removedKeys, setSettings, setValue, toggleLanguage } from "../src/settingsWire";
import { describe } from "../src/statusText";
import { Rest, TYPING_MS } from "../src/rest";
import { firstEdit, isCurrent, narrow, planEdit, SHOWN_MAX, tabAction } from "../src/nextEditPlan";
import type { InlineEdit } from "../src/protocol";
import "./editorDefinitionsUnit";

const READY: Status = {
  state: "ready",
  preset: "remote-llama-server",
  device: "remote",
  error: null,
  target: "bundled:smollm2-135m-instruct",
  draft: null,
  engine: { remote: "llama-server at http://127.0.0.1:8080", available: true, message: null },
};
const DOWN_WHY = "llama-server at http://127.0.0.1:8080: connection refused; retrying in 1.0 s";
const DOWN: Status = {
  ...READY,
  error: DOWN_WHY,
  engine: { remote: "llama-server at http://127.0.0.1:8080", available: false, message: DOWN_WHY },
};
const STATS = { shown: 4, accepted: 2, partiallyAccepted: 1, lastLatencyMs: 41.6, acceptance: 0.5 } as Stats;

const say = (status: Status | undefined, stats?: Stats) =>
  describe({ status, stats, progress: undefined, problem: undefined });

void test("a failing remote engine shows a warning with its reason in the tooltip", () => {
  const shown = say(DOWN, STATS);
  assert.equal(shown.text, "$(warning) spec-lsp engine down");
  assert.equal(shown.severity, "warning");
  assert.ok(shown.tooltip.includes(DOWN_WHY), shown.tooltip);
});

void test("a recovered remote engine goes back to the ready and latency texts", () => {
  assert.deepEqual(say(READY), {
    text: "$(zap) spec-lsp remote-llama-server",
    tooltip: "Ready: remote-llama-server on remote: bundled:smollm2-135m-instruct",
    severity: undefined,
  });
  const shown = say(READY, STATS);
  assert.equal(shown.text, "$(zap) spec-lsp 42 ms · 3/4 accepted");
  assert.equal(shown.severity, undefined);
});

void test("a local preset without an engine object is ready", () => {
  const local: Status = { ...READY, preset: "tiny", device: "cpu", engine: null };
  assert.equal(say(local).text, "$(zap) spec-lsp tiny");
  const older: Status = { ...local };
  delete older.engine; // a server from before the engine field
  assert.equal(say(older).text, "$(zap) spec-lsp tiny");
});

void test("a failed model load and a client-side problem are errors, before any engine state", () => {
  const failed = say({ ...DOWN, state: "failed", error: "no such model" });
  assert.deepEqual([failed.text, failed.severity], ["$(error) spec-lsp failed", "error"]);
  assert.ok(failed.tooltip.includes("no such model"));
  const problem = describe({ status: DOWN, stats: STATS, progress: undefined, problem: "server missing" });
  assert.deepEqual(problem, { text: "$(error) spec-lsp", tooltip: "server missing", severity: "error" });
});

void test("turned off and loading say so, whatever the engine", () => {
  assert.equal(say({ ...DOWN, state: "disabled" }).text, "$(circle-slash) spec-lsp off");
  assert.equal(say({ ...DOWN, state: "loading" }).text, "$(loading~spin) spec-lsp loading");
  assert.equal(say(undefined).text, "$(loading~spin) spec-lsp starting");
});

// --- which settings are sent (settingsWire.ts) ---------------------------------------------------

void test("only the settings the user set are sent, so serverArgs' --preset is not overridden", () => {
  const inspected: Record<string, Inspected> = {
    preset: {}, // left at its default: not sent
    maxTokens: { globalValue: 32 },
    partialMs: { globalValue: 0, workspaceValue: 250 },
  };
  const sent = setSettings(["preset", "maxTokens", "partialMs", "prefetch"], (k) => inspected[k]);
  assert.deepEqual(sent, { maxTokens: 32, partialMs: 250 });
});

void test("in an untrusted workspace a restricted setting takes the user's value only", () => {
  const inspect = (): Inspected => ({ globalValue: "coder", workspaceValue: "remote-vllm-qwen2.5-coder-7b" });
  assert.deepEqual(setSettings(["preset"], inspect, new Set(["preset"]), false), { preset: "coder" });
  assert.deepEqual(setSettings(["preset"], inspect, new Set(["preset"]), true), { preset: "remote-vllm-qwen2.5-coder-7b" });
  assert.equal(setValue({ workspaceValue: "x" }, false), undefined);
});

void test("a setting removed since the last send is found (the server restarts for it)", () => {
  assert.deepEqual(removedKeys({ preset: "tiny", maxTokens: 8 }, { maxTokens: 16 }), ["preset"]);
  assert.deepEqual(removedKeys({ maxTokens: 8 }, { maxTokens: 16, preset: "x" }), []);
});

void test("a language is switched off with !id under *, and back on", () => {
  assert.deepEqual(toggleLanguage(["*"], "markdown"), ["*", "!markdown"]);
  assert.equal(languageOn(["*", "!markdown"], "markdown"), false);
  assert.deepEqual(toggleLanguage(["*", "!markdown"], "markdown"), ["*"]);
  assert.deepEqual(toggleLanguage(["python"], "python"), []);
  assert.deepEqual(toggleLanguage(["python"], "rust"), ["python", "rust"]);
});

// --- which server runs (serverChoice.ts) ---------------------------------------------------------

const VENV = "/w/.venv/bin/spec-lsp";

void test("a workspace's .venv runs only with the user's consent, after the setting and PATH", () => {
  const none = { setting: "", onPath: undefined, workspaceVenvs: [VENV] };
  assert.deepEqual(chooseServer(none, () => false), { asked: [VENV] });
  assert.equal(chooseServer(none, (exe) => exe === VENV).server?.command, VENV);
  const onPath = { ...none, onPath: "/usr/bin/spec-lsp" };
  assert.equal(chooseServer(onPath, () => true).server?.command, "/usr/bin/spec-lsp");
  const set = { ...onPath, setting: "/opt/py/bin/python3.12" };
  assert.deepEqual(chooseServer(set, () => true).server?.prefix, ["-m", "spec_lsp.cli"]);
});

void test("a shared server's address is HOST:PORT, [IPv6]:PORT or a socket path", () => {
  assert.deepEqual(parseAddress("127.0.0.1:7777"), { host: "127.0.0.1", port: 7777 });
  assert.deepEqual(parseAddress(":7777"), { host: "127.0.0.1", port: 7777 });
  assert.deepEqual(parseAddress("[::1]:7777"), { host: "::1", port: 7777 });
  assert.deepEqual(parseAddress("/run/user/1/spec.sock"), { socket: "/run/user/1/spec.sock" });
  assert.deepEqual(parseAddress("unix:/tmp/s"), { socket: "/tmp/s" });
  assert.throws(() => parseAddress("localhost"), /HOST:PORT/);
  assert.throws(() => parseAddress("h:99999"), /HOST:PORT/);
});

void test("the token comes from the setting, else SPEC_LSP_TOKEN, else the file serve writes", () => {
  const tcp = { host: "127.0.0.1", port: 7777 };
  assert.deepEqual(tokenSource(tcp, "/t", { SPEC_LSP_TOKEN: "x" }, "/h"), { file: "/t" });
  assert.deepEqual(tokenSource(tcp, "", { SPEC_LSP_TOKEN: "x" }, "/h"), { value: "x" });
  assert.deepEqual(tokenSource(tcp, "", { XDG_RUNTIME_DIR: "/run/user/1" }, "/h"), { file: "/run/user/1/spec-lsp/7777.token" });
  assert.deepEqual(tokenSource(tcp, "", {}, "/h"), { file: "/h/.cache/spec-lsp/run/7777.token" });
  assert.equal(tokenSource({ socket: "/s" }, "", {}, "/h"), undefined);
});

void test("the shared server's socket is Neovim's, and it is started on it, ending when idle", () => {
  assert.equal(sharedSocket({ XDG_RUNTIME_DIR: "/run/user/1" }, "/h"), "/run/user/1/spec-lsp/shared.sock");
  assert.equal(sharedSocket({}, "/h"), "/h/.cache/spec-lsp/run/shared.sock");
  const socket = "/run/user/1/spec-lsp/shared.sock";
  assert.deepEqual(sharedServeArgs(["serve", "--preset", "tiny"], socket), [
    "serve", "--preset", "tiny", "--socket", socket, "--idle-exit", "300", "--log-file", "/run/user/1/spec-lsp/shared.log",
  ]);
  const logged = sharedServeArgs(["serve", "--log-file=/tmp/l"], socket);
  assert.deepEqual(logged, ["serve", "--log-file=/tmp/l", "--socket", socket, "--idle-exit", "300"]);
});

// A stand-in server: listens on the socket it is given, answers one connection, then exits.
const ONE_CONNECTION = "const s = require('net').createServer((c) => { c.end(); s.close(); }); s.listen(process.argv[1]);";

void test("with no shared server running, the first window starts one and connects", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "spec-lsp-shared-"));
  const socket = path.join(dir, "spec-lsp", "shared.sock");
  const lines: string[] = [];
  const stream = await connectOrStart(process.execPath, ["-e", ONE_CONNECTION, socket], socket, (l) => lines.push(l));
  assert.match(lines.join("\n"), /no shared server at .*: starting/);
  assert.equal(fs.statSync(path.dirname(socket)).mode & 0o777, 0o700);
  (stream.writer as import("node:net").Socket).destroy();
});

void test("with a shared server running, a window connects to it and starts nothing", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "spec-lsp-shared-"));
  const socket = path.join(dir, "shared.sock");
  const net = await import("node:net");
  const running = net.createServer((c) => c.end());
  await new Promise<void>((done) => running.listen(socket, done));
  const lines: string[] = [];
  const stream = await connectOrStart("/nonexistent/spec-lsp", [], socket, (l) => lines.push(l));
  assert.deepEqual(lines, []);
  (stream.writer as import("node:net").Socket).destroy();
  running.close();
});

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

void test("a cursor that rests after a move is sent once, after the last move", async () => {
  let sent = 0;
  const rest = new Rest(() => (sent += 1), 20);
  rest.moved();
  await sleep(5);
  rest.moved(); // moved again before resting: the first is forgotten
  assert.equal(sent, 0);
  await sleep(60);
  assert.equal(sent, 1);
  rest.dispose();
});

void test("a move that comes with an edit is typing and sends nothing", async () => {
  let sent = 0;
  let now = 1000;
  const rest = new Rest(() => (sent += 1), 10, () => now);
  rest.moved(); // a move before any edit: it rests
  rest.edited(); // then a key: the pending rest is dropped
  rest.moved(); // the key's own cursor move
  await sleep(40);
  assert.equal(sent, 0);
  now += TYPING_MS; // a move well after the last edit: navigation again
  rest.moved();
  await sleep(40);
  assert.equal(sent, 1);
  rest.dispose();
});

// --- next edits on screen (nextEditPlan.ts) -----------------------------------------------------

const at = (line: number, character: number) => ({ line, character });

void test("a renamed word in a replaced line shows as that word struck through and the new one after it", () => {
  const plan = planEdit(at(1, 0), "    return width * height", "    return w * height");
  assert.deepEqual(plan?.removed, [{ start: at(1, 11), end: at(1, 16) }]);
  assert.deepEqual(plan?.inserted, [{ at: at(1, 16), text: "w" }]);
  assert.deepEqual([plan?.first, plan?.last, plan?.multiline], [1, 1, false]);
  assert.deepEqual(plan?.target, at(1, 11)); // Tab's jump lands on the change
  assert.deepEqual(plan?.after, at(1, 12)); // and the cursor ends after the new text
});

void test("the changed middle is widened to whole words, never a word's tail", () => {
  assert.deepEqual(narrow("count += 1", "total += 1"), [0, 5]);
  assert.deepEqual(narrow("counter", "count"), [0, 0]);
  assert.deepEqual(narrow("f(a, b)", "f(a, b, c)"), [6, 1]);
  const plan = planEdit(at(0, 4), "f(a, b)", "f(a, b, c)");
  assert.deepEqual(plan?.removed, []);
  assert.deepEqual(plan?.inserted, [{ at: at(0, 10), text: ", c" }]);
});

void test("a pure insertion, a pure deletion and no change", () => {
  const insert = planEdit(at(2, 4), "", "x = 1");
  assert.deepEqual([insert?.removed, insert?.inserted], [[], [{ at: at(2, 4), text: "x = 1" }]]);
  const del = planEdit(at(3, 0), "a, b, c", "a, c");
  assert.deepEqual(del?.removed, [{ start: at(3, 3), end: at(3, 6) }]);
  assert.deepEqual(del?.inserted, []);
  assert.equal(planEdit(at(0, 0), "same", "same"), undefined);
});

void test("a change of as many lines as it replaces is shown line by line", () => {
  const plan = planEdit(at(3, 0), "a = width\nb = 2\nc = width", "a = w\nb = 2\nc = w");
  assert.deepEqual(plan?.removed, [
    { start: at(3, 4), end: at(3, 9) },
    { start: at(5, 4), end: at(5, 9) },
  ]);
  assert.deepEqual(plan?.inserted, [
    { at: at(3, 9), text: "w" },
    { at: at(5, 9), text: "w" },
  ]);
  assert.deepEqual([plan?.first, plan?.last, plan?.multiline], [3, 5, true]);
});

void test("other multi-line changes: the old block struck, the new lines on one screen line", () => {
  const added = planEdit(at(4, 0), "x = 1", "x = 1\ny = 2");
  assert.deepEqual(added?.removed, []);
  assert.deepEqual(added?.inserted, [{ at: at(4, 5), text: " ⏎ y = 2" }]);
  assert.deepEqual([added?.first, added?.last, added?.multiline], [4, 4, true]);
  assert.deepEqual(added?.after, at(5, 5));
  const joined = planEdit(at(0, 0), "if a:\n    b()\n", "b()\n");
  assert.deepEqual(joined?.removed, [{ start: at(0, 0), end: at(1, 4) }]);
  assert.deepEqual([joined?.first, joined?.last], [0, 1]);
  const long = planEdit(at(0, 0), "", "x".repeat(500));
  assert.equal(long?.inserted[0].text.length, SHOWN_MAX);
  assert.ok(long?.inserted[0].text.endsWith("…"));
});

void test("CRLF in the document's text is a line break like LF", () => {
  const plan = planEdit(at(0, 0), "a = width\r\nb = width", "a = w\nb = w");
  assert.deepEqual(plan?.removed.map((r) => r.start), [at(0, 4), at(1, 4)]);
});

void test("Tab applies on the edit's lines and jumps from anywhere else", () => {
  const plan = planEdit(at(3, 0), "a = width\nc = width", "a = w\nc = w")!;
  assert.equal(tabAction(plan, 3), "apply");
  assert.equal(tabAction(plan, 4), "apply");
  assert.equal(tabAction(plan, 0), "jump");
  assert.equal(tabAction(plan, 5), "jump");
});

const EDIT: InlineEdit = {
  text: "    return w * height",
  textDocument: { uri: "file:///w/geometry.py", version: 7 },
  range: { start: at(1, 0), end: at(1, 25) },
  command: { title: "spec-lsp: next edit accepted", command: "spec-lsp.didAcceptInlineEdit", arguments: [{ id: "e1" }] },
};

void test("only a well-formed first edit of the answer is taken", () => {
  assert.equal(firstEdit({ edits: [EDIT] }), EDIT);
  assert.equal(firstEdit({ edits: [] }), undefined);
  assert.equal(firstEdit(null), undefined);
  assert.equal(firstEdit({ edits: [{ ...EDIT, text: 3 }] }), undefined);
  assert.equal(firstEdit({ edits: [{ ...EDIT, range: { start: at(2, 0), end: at(1, 0) } }] }), undefined);
  assert.equal(firstEdit({ edits: [{ ...EDIT, range: { start: at(-1, 0), end: at(1, 0) } }] }), undefined);
});

void test("an answer for a version the document has left is dropped", () => {
  assert.equal(isCurrent(EDIT, 7, 7), true);
  assert.equal(isCurrent(EDIT, 7, 8), false); // typed while the server thought
  assert.equal(isCurrent({ ...EDIT, textDocument: { ...EDIT.textDocument, version: 6 } }, 7, 7), false);
});

void test("every process the extension starts runs in the home folder, never the workspace", () => {
  // An empty PYTHONPATH entry names the server's working directory, and Python imports a
  // sitecustomize.py from there before spec-lsp runs (docs/security.md). Run from editors/vscode.
  const files = fs.readdirSync("src").filter((f) => f.endsWith(".ts"));
  const starts = files.flatMap((f) =>
    (fs.readFileSync(`src/${f}`, "utf8").match(/\bcp\.(?:spawn|execFile|exec|fork)\([^;]*/g) ?? []).map((s) => `${f}: ${s}`),
  );
  assert.ok(starts.length >= 2, starts.join("\n")); // the server (client.ts) and `models list` (menu.ts)
  for (const start of starts) assert.ok(start.includes("cwd: os.homedir()"), start);
});
