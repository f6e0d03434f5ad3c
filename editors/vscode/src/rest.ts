// When the cursor has come to rest: a move that was not typing, then no other move for `ms`.
// Pure (no VS Code), so test/unit.ts can drive it; cursor.ts feeds it the editor's events.

/** A move this soon after an edit is the edit's own (typing moves the cursor too). */
export const TYPING_MS = 50;
/** How long the cursor rests before the server hears of it (docs/protocol.md). */
export const REST_MS = 300;

export class Rest {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private lastEdit = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly fire: () => void,
    private readonly ms = REST_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** The document was edited (typing, a paste, an accept). */
  edited(): void {
    this.lastEdit = this.now();
    this.cancel();
  }

  /** The cursor moved, or another editor became the active one. */
  moved(): void {
    this.cancel();
    if (this.now() - this.lastEdit < TYPING_MS) return; // typing: each key asks anyway
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.fire();
    }, this.ms);
  }

  cancel(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  dispose(): void {
    this.cancel();
  }
}
