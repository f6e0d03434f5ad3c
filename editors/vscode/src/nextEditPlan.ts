// What a next edit (textDocument/copilotInlineEdit, docs/protocol.md) looks like on screen, and
// whether an answer still fits the document. Pure (no VS Code), so test/unit.ts can check it;
// nextEdit.ts turns a Plan into decorations.
//
// The server's edit may replace a whole line to change one word. The plan narrows it to what
// changes (the common head and tail dropped, widened to whole words), so `width` -> `w` shows as
// a struck-through `width` followed by `w`, not as a struck-through line and a new one. A change of
// as many lines as it replaces is shown line by line; any other multi-line change as one struck
// block and its new text on one line (lines joined by ⏎), whole in the hover.
import type { InlineEdit } from "./protocol";

export interface Pos {
  line: number;
  character: number;
}

export interface Span {
  start: Pos;
  end: Pos;
}

/** New text shown (as an `after` decoration) at a position: one line of screen text. */
export interface Shown {
  at: Pos;
  text: string;
}

export interface Plan {
  /** Old text to strike through (may span lines). */
  removed: Span[];
  /** New text, each piece on one screen line. */
  inserted: Shown[];
  /** The first and last document lines the change touches. */
  first: number;
  last: number;
  /** Where the cursor goes to jump to the edit: the start of the change. */
  target: Pos;
  /** Where the cursor goes after the edit is applied: the end of the new text. */
  after: Pos;
  /** The change spans lines (the hover then shows the new text whole). */
  multiline: boolean;
}

/** The most new-text characters shown on screen; the hover has all of it. */
export const SHOWN_MAX = 120;
const NEWLINE = " ⏎ ";

const WORD = /[\p{L}\p{N}_$]/u;
const isWord = (c: string | undefined) => c !== undefined && WORD.test(c);

/** `start` moved over `text` (line breaks are "\n"). */
export function advance(start: Pos, text: string): Pos {
  const lines = text.split("\n");
  if (lines.length === 1) return { line: start.line, character: start.character + text.length };
  return { line: start.line + lines.length - 1, character: lines[lines.length - 1].length };
}

/**
 * The part of `before` that `after` changes: [head, tail] lengths the two share, widened so the
 * changed middle starts and ends on word boundaries (never splitting a word of either text).
 */
export function narrow(before: string, after: string): [number, number] {
  const most = Math.min(before.length, after.length);
  let head = 0;
  while (head < most && before[head] === after[head]) head++;
  let tail = 0;
  while (tail < most - head && before[before.length - 1 - tail] === after[after.length - 1 - tail]) tail++;
  // A change inside a word takes the whole word: `width` -> `w` is `width` replaced by `w`.
  while (head > 0 && isWord(before[head - 1]) && (isWord(before[head]) || isWord(after[head]))) head--;
  while (
    tail > 0 &&
    isWord(before[before.length - tail]) &&
    (isWord(before[before.length - tail - 1]) || isWord(after[after.length - tail - 1]))
  ) {
    tail--;
  }
  return [head, tail];
}

/** One screen line for new text: lines joined by ⏎, shortened to SHOWN_MAX characters. */
export function screenText(text: string): string {
  const joined = text.split("\n").join(NEWLINE);
  return joined.length > SHOWN_MAX ? `${joined.slice(0, SHOWN_MAX - 1)}…` : joined;
}

function span(start: Pos, text: string): Span {
  return { start, end: advance(start, text) };
}

/**
 * The plan for replacing `oldText` (the document's text of the edit's range, which starts at
 * `start`) with `newText`; undefined when they are the same (nothing to show).
 */
export function planEdit(start: Pos, oldText: string, newText: string): Plan | undefined {
  const before = oldText.replace(/\r\n/g, "\n");
  const after = newText.replace(/\r\n/g, "\n");
  if (before === after) return undefined;
  const [head, tail] = narrow(before, after);
  const oldMid = before.slice(head, before.length - tail);
  const newMid = after.slice(head, after.length - tail);
  const from = advance(start, before.slice(0, head));
  const oldLines = oldMid.split("\n");
  const newLines = newMid.split("\n");
  const plan: Plan = {
    removed: [],
    inserted: [],
    first: from.line,
    last: advance(from, oldMid).line,
    target: from,
    after: advance(from, newMid),
    multiline: oldLines.length > 1 || newLines.length > 1,
  };
  if (oldLines.length > 1 && oldLines.length === newLines.length) {
    // As many lines as before: each line's own change, on its own line.
    oldLines.forEach((line, i) => {
      const lineStart = i === 0 ? from : { line: from.line + i, character: 0 };
      const sub = planEdit(lineStart, line, newLines[i]);
      if (sub) {
        plan.removed.push(...sub.removed);
        plan.inserted.push(...sub.inserted);
      }
    });
    return plan;
  }
  if (oldMid) plan.removed.push(span(from, oldMid));
  if (newMid) plan.inserted.push({ at: advance(from, oldMid), text: screenText(newMid) });
  return plan;
}

/** What Tab does: apply when the cursor is on the lines the edit changes, else jump there first. */
export function tabAction(plan: Plan, cursorLine: number): "apply" | "jump" {
  return cursorLine >= plan.first && cursorLine <= plan.last ? "apply" : "jump";
}

function isPos(x: unknown): x is Pos {
  if (!x || typeof x !== "object") return false;
  const p = x as Record<string, unknown>;
  return Number.isInteger(p.line) && Number.isInteger(p.character) && (p.line as number) >= 0 && (p.character as number) >= 0;
}

/** The first well-formed edit of a copilotInlineEdit answer (`{edits: [...]}`), if any. */
export function firstEdit(result: unknown): InlineEdit | undefined {
  if (!result || typeof result !== "object") return undefined;
  const edits = (result as { edits?: unknown }).edits;
  if (!Array.isArray(edits)) return undefined;
  const edit = edits[0] as Partial<InlineEdit> | undefined;
  if (!edit || typeof edit !== "object" || typeof edit.text !== "string") return undefined;
  const range = edit.range;
  if (!range || !isPos(range.start) || !isPos(range.end)) return undefined;
  const { start, end } = range;
  if (start.line > end.line || (start.line === end.line && start.character > end.character)) return undefined;
  return edit as InlineEdit;
}

/**
 * An answer still fits when the document is at the version the request named and the edit (if it
 * says) was computed for that version: anything else is stale and is dropped.
 */
export function isCurrent(edit: InlineEdit, requestedVersion: number, documentVersion: number): boolean {
  if (documentVersion !== requestedVersion) return false;
  const version = edit.textDocument?.version;
  return version === undefined || version === null || version === requestedVersion;
}
