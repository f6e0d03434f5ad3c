// Definitions the editor already knows (`specLsp.editorDefinitions`, off by default): when typing
// or the cursor pauses, asks VS Code's other definition and hover providers (the language servers
// of Python, Go, TypeScript... spec-lsp provides neither) about the identifiers of the cursor's
// line and the line above, and sends what they answer to the server with `spec-lsp/definitions`
// (docs/protocol.md), which puts them in its prompts as it does its own index's definitions.
// With no other provider nothing answers and nothing is sent. The decisions are pure functions in
// editorDefinitionsPlan.ts.
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import { type Answer, entries, hoverText, identifiersNear, LastSent, type WireRange } from "./editorDefinitionsPlan";

export const METHOD = "spec-lsp/definitions";
/** ms typing and the cursor rest before the other providers are asked. */
export const PAUSE_MS = 250;
/** ms the providers have to answer one identifier; what came by then is used. */
export const ANSWER_MS = 1500;

export interface DefinitionsHost {
  client(): LanguageClient | undefined;
  log(line: string): void;
}

function on(): boolean {
  return vscode.workspace.getConfiguration("specLsp").get<boolean>("editorDefinitions", false);
}

function wireRange(r: vscode.Range): WireRange {
  return { start: { line: r.start.line, character: r.start.character }, end: { line: r.end.line, character: r.end.character } };
}

function within<T>(ms: number, work: Thenable<T>, fallback: T): Promise<T> {
  return Promise.race([Promise.resolve(work), new Promise<T>((done) => setTimeout(() => done(fallback), ms))]);
}

/** The other providers' first definition of what is at `position`, and its hover text. */
async function answer(uri: vscode.Uri, position: vscode.Position, asUri: (u: vscode.Uri) => string): Promise<Answer | undefined> {
  type Found = (vscode.Location | vscode.LocationLink)[] | undefined;
  const found = await within<Found>(ANSWER_MS, vscode.commands.executeCommand<Found>("vscode.executeDefinitionProvider", uri, position), undefined);
  const first = found?.[0];
  if (!first) return undefined; // no other provider, or it knows nothing here
  const target = "targetUri" in first ? first.targetUri : first.uri;
  const range = "targetUri" in first ? (first.targetSelectionRange ?? first.targetRange) : first.range;
  const hovers = await within<vscode.Hover[] | undefined>(ANSWER_MS, vscode.commands.executeCommand<vscode.Hover[]>("vscode.executeHoverProvider", uri, position), undefined);
  const text = (hovers ?? []).map((h) => hoverText(h.contents)).filter((t) => t !== "").join("\n");
  return { uri: asUri(target), range: wireRange(range), text };
}

export class EditorDefinitions implements vscode.Disposable {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly last = new LastSent();
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly host: DefinitionsHost) {
    const paused = () => this.pauseSoon();
    this.subscriptions = [
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.document === vscode.window.activeTextEditor?.document && e.contentChanges.length) paused();
      }),
      vscode.window.onDidChangeTextEditorSelection((e) => {
        if (e.textEditor === vscode.window.activeTextEditor) paused();
      }),
      vscode.workspace.onDidCloseTextDocument((d) => this.last.forget(d.uri.toString())),
    ];
  }

  private pauseSoon(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (!on()) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.collect().catch((err: unknown) => this.host.log(`spec-lsp: editor definitions: ${String(err)}`));
    }, PAUSE_MS);
  }

  /** Asks about the identifiers near the active editor's cursor and sends what came. */
  async collect(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const client = this.host.client();
    if (!editor || !client || !on()) return;
    const doc = editor.document;
    const { line, character } = editor.selection.active;
    const above = line > 0 ? doc.lineAt(line - 1).text : undefined;
    const ids = identifiersNear(above, doc.lineAt(line).text, line, character);
    const version = doc.version;
    const asUri = (u: vscode.Uri) => client.code2ProtocolConverter.asUri(u);
    const answers = await Promise.all(ids.map((id) => answer(doc.uri, new vscode.Position(id.line, id.character), asUri)));
    const uri = asUri(doc.uri);
    const list = entries(ids, answers, uri);
    if (!this.last.isNew(uri, list) || this.host.client() !== client) return;
    await client.sendNotification(METHOD, { textDocument: { uri, version }, definitions: list });
  }

  dispose(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    for (const s of this.subscriptions) s.dispose();
  }
}
