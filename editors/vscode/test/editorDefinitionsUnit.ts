// Unit tests of editorDefinitionsPlan.ts (`specLsp.editorDefinitions`): which identifiers are asked
// about, how the other servers' answers become `spec-lsp/definitions` entries, and that the same
// list is not sent twice. Imported by unit.ts, run in plain Node (node:test).
import assert from "node:assert/strict";
import { test } from "node:test";
import { type Answer, entries, hoverText, identifiersNear, LastSent, MAX_NAMES } from "../src/editorDefinitionsPlan";

const RANGE = { start: { line: 3, character: 4 }, end: { line: 3, character: 13 } };
const HOVER = "```python\ndef rect_area(width: float, height: float) -> float\n```";

void test("the cursor's line comes first, nearest first, then the line above; each name once", () => {
  const ids = identifiersNear("m = mean(values)", "total = rect_area(m, values", 5, 18);
  assert.deepEqual(
    ids.map((i) => [i.name, i.line, i.character]),
    [
      ["m", 5, 18],
      ["values", 5, 21],
      ["rect_area", 5, 8],
      ["total", 5, 0],
      ["mean", 4, 4],
    ],
  );
});

void test("at most MAX_NAMES identifiers are asked about, none above the first line", () => {
  const line = Array.from({ length: 20 }, (_, i) => `n${i}`).join(" + ");
  assert.equal(identifiersNear(undefined, line, 0, 0).length, MAX_NAMES);
  assert.deepEqual(identifiersNear("ignored", "x", 0, 0), [{ name: "x", line: 0, character: 0 }]);
});

void test("hover contents of every shape become plain text", () => {
  assert.equal(hoverText({ kind: "markdown", value: HOVER }), HOVER);
  assert.equal(hoverText(["a", { language: "python", value: "def f()" }, { value: "" }]), "a\ndef f()");
  assert.equal(hoverText(undefined), "");
});

void test("only definitions in another file with hover text are sent, each name once", () => {
  const ids = identifiersNear(undefined, "x = rect_area(values)", 0, 14);
  const ok: Answer = { uri: "file:///lib/geometry.py", range: RANGE, text: HOVER };
  const byName: Record<string, Answer | undefined> = {
    rect_area: ok,
    values: { uri: "file:///w/main.py", range: RANGE, text: "values: list" }, // this document's own
    x: { uri: "file:///lib/other.py", range: RANGE, text: "  " }, // no hover text
  };
  const list = entries(ids, ids.map((i) => byName[i.name]), "file:///w/main.py");
  assert.deepEqual(list, [{ name: "rect_area", uri: "file:///lib/geometry.py", range: RANGE, text: HOVER }]);
});

void test("the same list is not sent twice for a document, an empty one never", () => {
  const last = new LastSent();
  const list = [{ name: "rect_area", uri: "file:///lib/geometry.py", range: RANGE, text: HOVER }];
  assert.equal(last.isNew("file:///w/main.py", []), false);
  assert.equal(last.isNew("file:///w/main.py", list), true);
  assert.equal(last.isNew("file:///w/main.py", list), false);
  assert.equal(last.isNew("file:///w/other.py", list), true);
  last.forget("file:///w/main.py");
  assert.equal(last.isNew("file:///w/main.py", list), true);
});
