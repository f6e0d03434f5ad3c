// Unit tests of the extension's pure logic, in plain Node (node:test), without VS Code:
// `npm run unit` after `npm run build`; tests/editors/test_vscode_unit.py runs it under pytest.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Stats, Status } from "../src/protocol";
import { chooseServer, parseAddress, tokenSource } from "../src/serverChoice";
import { type Inspected, languageOn, removedKeys, setSettings, setValue, toggleLanguage } from "../src/settingsWire";
import { describe } from "../src/statusText";
import { Rest, TYPING_MS } from "../src/rest";

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
