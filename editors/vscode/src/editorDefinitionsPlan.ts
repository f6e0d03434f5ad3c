// The pure part of editorDefinitions.ts (no VS Code, so test/unit.ts drives it): which
// identifiers near the cursor are asked about, how the other language servers' definition and
// hover answers become the `spec-lsp/definitions` entries (docs/protocol.md), and when a list
// is the one sent last.

/** Identifiers asked about at one pause (the nearest to the cursor first). */
export const MAX_NAMES = 8;

/** An identifier of the cursor's line or the line above: 0-based line, UTF-16 character. */
export interface Identifier {
  name: string;
  line: number;
  character: number;
}

/** A position and range as LSP writes them. */
export interface WireRange {
  start: { line: number; character: number };
  end: { line: number; character: number };
}

/** One definition for `spec-lsp/definitions`. */
export interface Entry {
  name: string;
  uri: string;
  range: WireRange;
  text: string;
}

/** What the other servers answered for one identifier: the definition's file and range (the
 * first location, none: undefined) and the hover text. */
export interface Answer {
  uri: string | undefined;
  range: WireRange | undefined;
  text: string;
}

const IDENT = /[A-Za-z_][A-Za-z0-9_]*/g;

/**
 * The identifiers of `current` (the cursor's line, `line`) and `above` (the line before), the
 * cursor's line first, each nearest to `character` first; each name once, `max` at most.
 */
export function identifiersNear(above: string | undefined, current: string, line: number, character: number, max = MAX_NAMES): Identifier[] {
  const found: (Identifier & { distance: number })[] = [];
  const scan = (text: string, row: number, far: number) => {
    for (const m of text.matchAll(IDENT)) {
      const at = m.index ?? 0;
      found.push({ name: m[0], line: row, character: at, distance: far + Math.abs(character - at) });
    }
  };
  scan(current, line, 0);
  if (above !== undefined && line > 0) scan(above, line - 1, 1_000_000);
  found.sort((a, b) => a.distance - b.distance);
  const seen = new Set<string>();
  const out: Identifier[] = [];
  for (const { name, line: row, character: at } of found) {
    if (seen.has(name) || out.length >= max) continue;
    seen.add(name);
    out.push({ name, line: row, character: at });
  }
  return out;
}

/** A hover's contents (MarkdownString, MarkedString, or a list of them) as plain text. */
export function hoverText(contents: unknown): string {
  if (typeof contents === "string") return contents;
  if (Array.isArray(contents)) return contents.map(hoverText).filter((t) => t !== "").join("\n");
  if (contents && typeof contents === "object" && "value" in contents) return String(contents.value);
  return "";
}

/**
 * The entries to send, in the identifiers' order: those whose definition is in another file
 * than `documentUri` and whose hover has text, each name once.
 */
export function entries(ids: Identifier[], answers: (Answer | undefined)[], documentUri: string): Entry[] {
  const out: Entry[] = [];
  ids.forEach((id, i) => {
    const a = answers[i];
    if (!a?.uri || !a.range || a.uri === documentUri || a.text.trim() === "") return;
    if (out.some((e) => e.name === id.name)) return;
    out.push({ name: id.name, uri: a.uri, range: a.range, text: a.text });
  });
  return out;
}

/** Remembers the list sent last for each document, so that the same list is not sent again. */
export class LastSent {
  private readonly sent = new Map<string, string>();

  /** True (and remembered) when `list` is new for `uri`; an empty list is never sent. */
  isNew(uri: string, list: Entry[]): boolean {
    if (list.length === 0) return false;
    const key = JSON.stringify(list);
    if (this.sent.get(uri) === key) return false;
    this.sent.set(uri, key);
    return true;
  }

  forget(uri: string): void {
    this.sent.delete(uri);
  }
}
