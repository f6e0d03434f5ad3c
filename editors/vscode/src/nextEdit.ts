// Next edit suggestions: once the cursor rests, ask the server where the next edit goes
// (textDocument/copilotInlineEdit, docs/protocol.md) and show it with decorations, the stable API:
// the old text struck through on the diff editor's removed-text background, the new text after it,
// a mark in the overview ruler and the gutter, and a hover with the whole change. Tab jumps to it
// (when the cursor is elsewhere) then applies it, Escape dismisses it; both only while one is shown
// (the context key specLsp.nextEditVisible) and no ghost text is.
//
// Settings: specLsp.nextEdit (the server's: false answers no edit, so nothing is asked),
// specLsp.nextEditIdleMs (the rest before asking), specLsp.nextEditWhileTyping (ask after each
// change instead of once typing pauses). Nothing is asked or shown over a selection, nor while the
// inline completion provider has ghost text for this very version and cursor; Escape over ghost
// text (specLsp.hideInlineSuggestion: VS Code's own hide) lifts that, so a next edit may follow.
import * as vscode from "vscode";
import { ExecuteCommandRequest, type LanguageClient } from "vscode-languageclient/node";
import { TYPING_MS } from "./rest";
import { firstEdit, isCurrent, type Plan, planEdit, tabAction } from "./nextEditPlan";
import {
  DidRejectInlineEdit,
  DidShowInlineEdit,
  type InlineEdit,
  InlineEditRequest,
  suggestionId,
} from "./protocol";

export const CONTEXT_KEY = "specLsp.nextEditVisible";
/** The delay after a change when specLsp.nextEditWhileTyping is on: coalesces a burst of keys. */
const TYPING_DELAY_MS = 30;

export interface NextEditHost {
  /** The language client while the server runs. */
  client(): LanguageClient | undefined;
  log(line: string): void;
}

interface ShownEdit {
  editor: vscode.TextEditor;
  document: vscode.TextDocument;
  version: number;
  edit: InlineEdit;
  range: vscode.Range;
  plan: Plan;
  id: string | undefined;
}

const GUTTER_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16">' +
  '<path d="M3 3h2l5 5-5 5H3l5-5z" fill="#3794ff"/></svg>';

function settings(): { on: boolean; idleMs: number; whileTyping: boolean } {
  const cfg = vscode.workspace.getConfiguration("specLsp");
  const idle = cfg.get<number>("nextEditIdleMs", 400);
  return {
    on: cfg.get<boolean>("nextEdit", true),
    idleMs: Number.isFinite(idle) && idle >= 0 ? idle : 400,
    whileTyping: cfg.get<boolean>("nextEditWhileTyping", false),
  };
}

function position(p: { line: number; character: number }): vscode.Position {
  return new vscode.Position(p.line, p.character);
}

export class NextEdits implements vscode.Disposable {
  private shown: ShownEdit | undefined;
  private visible = false;
  /** When the document last changed (Date.now()). */
  private lastEdit = Number.NEGATIVE_INFINITY;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private request: vscode.CancellationTokenSource | undefined;
  /** Ids already reported as shown (textDocument/didShowInlineEdit once per edit). */
  private reported = new Set<string>();
  /** Where the inline completion provider last returned ghost text. */
  private completion: { document: vscode.TextDocument; version: number; offset: number } | undefined;
  /** A client whose server answered "method not found": asked no more. */
  private unsupported: LanguageClient | undefined;
  private readonly removedType: vscode.TextEditorDecorationType;
  private readonly insertedType: vscode.TextEditorDecorationType;
  private readonly lineType: vscode.TextEditorDecorationType;
  private readonly hintType: vscode.TextEditorDecorationType;
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly host: NextEditHost) {
    this.removedType = vscode.window.createTextEditorDecorationType({
      backgroundColor: new vscode.ThemeColor("diffEditor.removedTextBackground"),
      textDecoration: "line-through",
      rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
    });
    this.insertedType = vscode.window.createTextEditorDecorationType({
      after: {
        backgroundColor: new vscode.ThemeColor("diffEditor.insertedTextBackground"),
        margin: "0 0 0 0.2em",
        border: "1px solid",
        borderColor: new vscode.ThemeColor("diffEditor.insertedLineBackground"),
      },
      rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
    });
    this.lineType = vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.modifiedForeground"),
      overviewRulerLane: vscode.OverviewRulerLane.Full,
      gutterIconPath: vscode.Uri.parse(`data:image/svg+xml;base64,${Buffer.from(GUTTER_SVG).toString("base64")}`),
      gutterIconSize: "contain",
    });
    this.hintType = vscode.window.createTextEditorDecorationType({
      after: { color: new vscode.ThemeColor("editorGhostText.foreground"), margin: "0 0 0 2em", fontStyle: "italic" },
    });
    this.subscriptions = [
      this.removedType,
      this.insertedType,
      this.lineType,
      this.hintType,
      vscode.workspace.onDidChangeTextDocument((e) => this.changed(e)),
      vscode.window.onDidChangeTextEditorSelection((e) => this.moved(e)),
      vscode.window.onDidChangeActiveTextEditor(() => {
        this.clear();
        this.schedule(settings().idleMs);
      }),
      vscode.window.onDidChangeVisibleTextEditors((editors) => {
        if (this.shown && !editors.includes(this.shown.editor)) this.clear();
      }),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration("specLsp.nextEdit") && !settings().on) this.stop();
      }),
    ];
  }

  /** Whether a next edit is on screen. */
  get isVisible(): boolean {
    return this.shown !== undefined;
  }

  /**
   * The inline completion provider returned ghost text here (client.ts's middleware): a next edit
   * shown in the same document gives way to it, and none is shown until the document or cursor moves on.
   */
  completionOffered(document: vscode.TextDocument, version: number, offset: number): void {
    this.completion = { document, version, offset };
    if (this.shown?.document === document && version === document.version) this.clear();
  }

  // --- when to ask ------------------------------------------------------------------------------

  private changed(e: vscode.TextDocumentChangeEvent): void {
    if (e.contentChanges.length === 0) return;
    this.lastEdit = Date.now();
    if (this.shown?.document === e.document) this.clear();
    if (e.document !== vscode.window.activeTextEditor?.document) return;
    const s = settings();
    this.schedule(s.whileTyping ? Math.min(s.idleMs, TYPING_DELAY_MS) : s.idleMs);
  }

  private moved(e: vscode.TextEditorSelectionChangeEvent): void {
    if (e.textEditor !== vscode.window.activeTextEditor) return;
    const shown = this.shown;
    if (!e.textEditor.selection.isEmpty) {
      // Never over a selection: hidden (not dismissed), asked again once the selection is gone.
      this.cancel();
      if (shown?.editor === e.textEditor) this.clear();
      return;
    }
    if (shown?.editor === e.textEditor && shown.document.version === shown.version) {
      this.drawHint(shown); // the edit holds for this version wherever the cursor goes
      return;
    }
    // A typed key moves the cursor too: its change (which comes first) already set the delay.
    if (Date.now() - this.lastEdit < TYPING_MS) return;
    this.schedule(settings().idleMs);
  }

  private schedule(delayMs: number): void {
    this.cancel();
    if (!settings().on) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.ask();
    }, delayMs);
  }

  /** Stops the pending and running requests. */
  private cancel(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.request?.cancel();
    this.request = undefined;
  }

  private completionHere(editor: vscode.TextEditor): boolean {
    const c = this.completion;
    return (
      c !== undefined &&
      c.document === editor.document &&
      c.version === editor.document.version &&
      c.offset === editor.document.offsetAt(editor.selection.active)
    );
  }

  private async ask(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const client = this.host.client();
    if (!editor || !client || client === this.unsupported || !settings().on) return;
    const document = editor.document;
    if (document.uri.scheme !== "file" && document.uri.scheme !== "untitled") return;
    if (!editor.selection.isEmpty || this.completionHere(editor)) return;
    if (this.shown && this.shown.document === document && this.shown.version === document.version) return;
    const version = document.version;
    const c2p = client.code2ProtocolConverter;
    const source = new vscode.CancellationTokenSource();
    this.request = source;
    let result: unknown;
    let failure: { error: unknown } | undefined;
    try {
      result = await client.sendRequest(
        InlineEditRequest,
        { textDocument: { uri: c2p.asUri(document.uri), version }, position: c2p.asPosition(editor.selection.active) },
        source.token,
      );
    } catch (error) {
      failure = { error };
    }
    const cancelled = source.token.isCancellationRequested;
    if (this.request === source) this.request = undefined;
    source.dispose();
    if (cancelled) return;
    if (failure) {
      const code = (failure.error as { code?: unknown } | undefined)?.code;
      if (code === -32601) {
        this.unsupported = client;
        this.host.log(`next edits: the server does not know ${InlineEditRequest}; not asked again until it restarts`);
      } else {
        this.host.log(`next edits: ${InlineEditRequest} failed: ${String(failure.error)}`);
      }
      return;
    }
    const edit = firstEdit(result);
    if (!edit) return;
    if (!isCurrent(edit, version, document.version)) {
      this.host.log(`next edits: dropped an edit for version ${edit.textDocument?.version ?? version}; the document is at ${document.version}`);
      return;
    }
    if (vscode.window.activeTextEditor !== editor || !editor.selection.isEmpty || this.completionHere(editor)) return;
    this.show(editor, edit, version);
  }

  // --- on screen ----------------------------------------------------------------------------------

  private show(editor: vscode.TextEditor, edit: InlineEdit, version: number): void {
    const client = this.host.client();
    if (!client) return;
    const document = editor.document;
    const asked = client.protocol2CodeConverter.asRange(edit.range);
    const range = document.validateRange(asked);
    // Planned on whole lines, so that a change inside a word (the server's smallest edit of
    // `width` -> `w` deletes `idth`) shows as the whole word replaced.
    const whole = new vscode.Range(range.start.line, 0, range.end.line, document.lineAt(range.end.line).text.length);
    const head = document.getText(new vscode.Range(whole.start, range.start));
    const tail = document.getText(new vscode.Range(range.end, whole.end));
    const plan = planEdit(whole.start, document.getText(whole), head + edit.text + tail);
    if (!plan || !range.isEqual(asked)) {
      if (plan) this.host.log("next edits: dropped an edit whose range is outside the document");
      return;
    }
    this.clear();
    const shown: ShownEdit = { editor, document, version, edit, range, plan, id: suggestionId(edit.command?.arguments) };
    this.shown = shown;
    editor.setDecorations(
      this.removedType,
      plan.removed.map((s) => new vscode.Range(position(s.start), position(s.end))),
    );
    editor.setDecorations(
      this.insertedType,
      plan.inserted.map((i) => ({
        range: new vscode.Range(position(i.at), position(i.at)),
        renderOptions: { after: { contentText: i.text } },
      })),
    );
    const hover = this.hover(document, shown);
    const lines: vscode.DecorationOptions[] = [];
    for (let line = plan.first; line <= plan.last; line++) {
      lines.push({ range: new vscode.Range(line, 0, line, 0), hoverMessage: hover });
    }
    editor.setDecorations(this.lineType, lines);
    this.drawHint(shown);
    this.setVisible(true);
    const key = shown.id ?? `${document.uri.toString()}@${version}`;
    if (!this.reported.has(key)) {
      this.reported.add(key);
      if (this.reported.size > 1000) this.reported = new Set([key]);
      void client.sendNotification(DidShowInlineEdit, { item: edit });
    }
    this.host.log(`next edit shown: lines ${plan.first + 1}-${plan.last + 1} -> ${JSON.stringify(edit.text)}${shown.id ? ` (${shown.id})` : ""}`);
  }

  private hover(document: vscode.TextDocument, shown: ShownEdit): vscode.MarkdownString {
    const md = new vscode.MarkdownString("**spec-lsp next edit**: `Tab` to apply it, `Escape` to dismiss it.");
    if (shown.edit.text) {
      md.appendMarkdown(" The new text:\n");
      md.appendCodeblock(shown.edit.text, document.languageId);
    } else {
      md.appendMarkdown(" It deletes the struck-through text.");
    }
    return md;
  }

  /** Where the cursor is off the edit's lines: a hint at the end of its line that Tab goes there. */
  private drawHint(shown: ShownEdit): void {
    const editor = shown.editor;
    const cursor = editor.selection.active;
    if (tabAction(shown.plan, cursor.line) === "apply") {
      editor.setDecorations(this.hintType, []);
      return;
    }
    const end = editor.document.lineAt(cursor.line).range.end;
    const where = shown.plan.first > cursor.line ? "↓" : "↑";
    editor.setDecorations(this.hintType, [
      { range: new vscode.Range(end, end), renderOptions: { after: { contentText: `${where} next edit at line ${shown.plan.first + 1}: Tab` } } },
    ]);
  }

  private setVisible(visible: boolean): void {
    if (this.visible === visible) return;
    this.visible = visible;
    void vscode.commands.executeCommand("setContext", CONTEXT_KEY, visible);
  }

  /** Takes the shown edit off the screen (it is not reported as dismissed). */
  private clear(): void {
    const shown = this.shown;
    this.shown = undefined;
    if (shown) {
      for (const type of [this.removedType, this.insertedType, this.lineType, this.hintType]) {
        try {
          shown.editor.setDecorations(type, []);
        } catch {
          // the editor is closed: its decorations went with it
        }
      }
    }
    this.setVisible(false);
  }

  private stop(): void {
    this.cancel();
    this.clear();
  }

  // --- commands -----------------------------------------------------------------------------------

  /**
   * Escape over ghost text: VS Code's own hide, then a next edit may be asked for here (VS Code does
   * not tell an extension that its ghost text is gone, which otherwise blocks one until a move).
   */
  async hideCompletion(): Promise<void> {
    await vscode.commands.executeCommand("editor.action.inlineSuggest.hide");
    this.completion = undefined;
    this.schedule(settings().idleMs);
  }

  /** Tab: jumps to the edit when the cursor is off its lines, else applies it and asks for the next. */
  async accept(): Promise<void> {
    const shown = this.shown;
    const editor = vscode.window.activeTextEditor;
    if (!shown) return;
    if (editor !== shown.editor || shown.document.version !== shown.version) {
      this.clear();
      return;
    }
    if (tabAction(shown.plan, editor.selection.active.line) === "jump") {
      const target = position(shown.plan.target);
      editor.selection = new vscode.Selection(target, target);
      editor.revealRange(new vscode.Range(target, target), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
      return;
    }
    this.clear();
    const applied = await editor.edit((b) => b.replace(shown.range, shown.edit.text));
    if (!applied) {
      this.host.log("next edits: VS Code did not apply the edit");
      return;
    }
    const after = editor.document.validatePosition(position(shown.plan.after));
    editor.selection = new vscode.Selection(after, after);
    await this.runCommand(shown.edit);
    this.schedule(settings().idleMs); // and the next one
  }

  /**
   * The edit's own command (spec-lsp.didAcceptInlineEdit) tells the server it was accepted: run as a
   * VS Code command, which the language client forwards as workspace/executeCommand (through
   * client.ts's middleware, as a completion's accept); sent directly if the server did not list it.
   */
  private async runCommand(edit: InlineEdit): Promise<void> {
    const command = edit.command;
    const client = this.host.client();
    if (!command || !client) return;
    try {
      const listed = client.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
      if (listed.includes(command.command)) {
        await vscode.commands.executeCommand(command.command, ...(command.arguments ?? []));
      } else {
        await client.sendRequest(ExecuteCommandRequest.type, { command: command.command, arguments: command.arguments });
      }
    } catch (err) {
      this.host.log(`next edits: ${command.command} failed: ${String(err)}`);
    }
  }

  /** Escape: hides the edit and tells the server it was dismissed. */
  dismiss(): void {
    const shown = this.shown;
    this.cancel();
    this.clear();
    const client = this.host.client();
    if (shown?.id && client) void client.sendNotification(DidRejectInlineEdit, { id: shown.id });
  }

  /** Next edits on or off: the server's specLsp.nextEdit, in the user settings. */
  async toggle(): Promise<void> {
    const cfg = vscode.workspace.getConfiguration("specLsp");
    const on = !cfg.get<boolean>("nextEdit", true);
    await cfg.update("nextEdit", on, vscode.ConfigurationTarget.Global);
    if (!on) this.stop();
    vscode.window.setStatusBarMessage(`spec-lsp: next edit suggestions ${on ? "on" : "off"}`, 3000);
  }

  dispose(): void {
    this.cancel();
    this.clear();
    for (const s of this.subscriptions) s.dispose();
  }
}
