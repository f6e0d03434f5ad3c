// Unit tests of the extension's pure logic, in plain Node (node:test), without VS Code:
// `npm run unit` after `npm run build`; tests/editors/test_vscode_unit.py runs it under pytest.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Stats, Status } from "../src/protocol";
import { describe } from "../src/statusText";

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
