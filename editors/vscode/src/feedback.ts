// Tells the server which suggestions were shown and how much of them was taken.
//
// VS Code's stable API does not say when ghost text is shown or partly accepted (those hooks are
// proposed API), so this infers both from what the provider returned and from document edits:
// - shown: a suggestion returned for the document version and cursor that are still current;
// - partly accepted: one edit that inserts, at the suggestion's insertion point, a prefix of what is
//   left of it longer than one character (Ctrl+Right, "accept next word"; typing inserts one
//   character at a time, so a one-character partial accept, such as a leading space, counts as typed);
// - accepted: the item's command (spec-lsp.didAcceptCompletion) runs, which the client forwards.
import * as vscode from "vscode";

export interface Offered {
  id: string;
  text: string;
  document: vscode.TextDocument;
  version: number;
  /** Offset in the document where the suggestion is inserted. */
  offset: number;
}

export type Notify = (method: string, params: object) => void;

export class Feedback implements vscode.Disposable {
  private shown: Offered | undefined;
  /** UTF-16 code units of `shown.text` already inserted by partial accepts. */
  private taken = 0;
  private readonly subscription: vscode.Disposable;

  constructor(
    private readonly notify: Notify,
    private readonly onChange: () => void,
    private readonly log: (line: string) => void,
  ) {
    this.subscription = vscode.workspace.onDidChangeTextDocument((e) => this.changed(e));
  }

  /** Called with the first item the provider returned for a request. */
  offered(item: Offered): void {
    // Give the editor a moment to render; a newer keystroke makes this suggestion moot.
    setTimeout(() => {
      const editor = vscode.window.activeTextEditor;
      if (!editor || editor.document !== item.document || item.document.version !== item.version) return;
      if (editor.document.offsetAt(editor.selection.active) !== item.offset) return;
      if (this.shown?.id === item.id) return;
      this.shown = item;
      this.taken = 0;
      this.notify("spec-lsp/didShowCompletion", { id: item.id });
      this.onChange();
    }, 50);
  }

  /** The suggestion with this id was accepted whole. */
  accepted(id: string | undefined): void {
    if (id === undefined || this.shown?.id === id) this.shown = undefined;
    this.onChange();
  }

  private changed(e: vscode.TextDocumentChangeEvent): void {
    const s = this.shown;
    if (!s || e.document !== s.document || e.contentChanges.length === 0) return;
    const only = e.contentChanges.length === 1 ? e.contentChanges[0] : undefined;
    const rest = s.text.slice(this.taken);
    const inserted = only?.text ?? "";
    const atPoint = only !== undefined && only.rangeLength === 0 && only.rangeOffset === s.offset + this.taken;
    if (!atPoint || !rest.startsWith(inserted) || inserted.length === 0) {
      this.shown = undefined; // the user went elsewhere: this suggestion is over
      return;
    }
    if (inserted.length === rest.length) {
      return; // the whole accept (its command reports that)
    }
    // Typing through it (or a one-character accept) keeps the rest on screen: follow it, so that a
    // later partial accept of the rest is still found at the suggestion's insertion point.
    this.taken += inserted.length;
    if (inserted.length === 1) return;
    // acceptedLength is what this edit took (the server adds them up), as the Neovim plugin sends.
    this.notify("spec-lsp/didPartiallyAcceptCompletion", { id: s.id, acceptedLength: inserted.length });
    this.log(`suggestion ${s.id}: ${this.taken} of ${s.text.length} characters accepted`);
    this.onChange();
  }

  dispose(): void {
    this.subscription.dispose();
  }
}
