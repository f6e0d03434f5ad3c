// Tells the server where the cursor rests (spec-lsp/didMoveCursor, docs/protocol.md), so that it
// prefills the prompt of a request there before the first key: a file opened deep in its text
// otherwise waits for its whole prompt window at the first key (seconds for the default pair on a
// CPU). Sent once the cursor has rested after a move that was not typing, and when an editor
// becomes the active one.
import * as vscode from "vscode";
import { Rest } from "./rest";

export type SendCursor = (document: vscode.TextDocument, position: vscode.Position) => void;

export class CursorRests implements vscode.Disposable {
  private readonly rest: Rest;
  private readonly subscriptions: vscode.Disposable[];

  constructor(send: SendCursor) {
    this.rest = new Rest(() => {
      const editor = vscode.window.activeTextEditor;
      if (editor) send(editor.document, editor.selection.active);
    });
    this.subscriptions = [
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.document === vscode.window.activeTextEditor?.document && e.contentChanges.length) this.rest.edited();
      }),
      vscode.window.onDidChangeTextEditorSelection((e) => {
        if (e.textEditor === vscode.window.activeTextEditor) this.rest.moved();
      }),
      vscode.window.onDidChangeActiveTextEditor((editor) => {
        if (editor) this.rest.moved();
      }),
    ];
  }

  dispose(): void {
    this.rest.dispose();
    for (const s of this.subscriptions) s.dispose();
  }
}
