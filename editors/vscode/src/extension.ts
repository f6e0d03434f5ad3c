// Entry point: wires the settings, the server, the status bar and the stats view to VS Code.
// No model logic lives here; everything about suggestions comes from the spec-lsp server over LSP.
import * as vscode from "vscode";
import { type Consent, needsRestart, recordPath, resolveServer } from "./config";
import { Server } from "./client";
import { EditorDefinitions } from "./editorDefinitions";
import { NextEdits } from "./nextEdit";
import { pickPreset, showMenu, toggleActiveLanguage, toggleAutoTrigger } from "./menu";
import { StatusItem } from "./status";
import { SCHEME, STATS_URI, StatsView } from "./statsView";

let server: Server | undefined;

/** "Run this workspace's own spec-lsp?": asked once per workspace, the answer kept there. */
function workspaceConsent(state: vscode.Memento): Consent {
  const key = (exe: string) => `spec-lsp.runWorkspaceServer:${exe}`;
  return {
    get: (exe) => state.get<boolean>(key(exe)),
    ask: async (exe) => {
      const run = "Run it";
      const pick = await vscode.window.showWarningMessage(
        `This workspace has its own spec-lsp: ${exe}. Run it? It runs as you, with your rights. ` +
          "(Set specLsp.serverPath in your user settings to choose a server yourself.)",
        run,
        "Don't run it",
      );
      if (pick === undefined) return false; // dismissed: ask again next time
      await state.update(key(exe), pick === run);
      return pick === run;
    },
  };
}

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel("spec-lsp", { log: true });
  const status = new StatusItem();
  const view = new StatsView();
  let recording: string | undefined;
  const statsOpen = () => vscode.workspace.textDocuments.some((d) => d.uri.toString() === STATS_URI.toString());
  const consent = workspaceConsent(context.workspaceState);
  const srv = new Server(
    output,
    status,
    () => {
      if (statsOpen()) view.update(srv.lastStatus, srv.lastStats);
    },
    consent,
  );
  server = srv;
  const nextEdits = new NextEdits({ client: () => srv.languageClient, log: (line) => output.info(line) });

  const showStats = async () => {
    let note: string | undefined;
    try {
      await srv.fetch();
      if (!srv.running) note = "The server is not running (see the spec-lsp output).";
    } catch (err) {
      note = `The server did not answer: ${String(err)}`;
    }
    view.update(srv.lastStatus, srv.lastStats, note);
    const doc = await vscode.workspace.openTextDocument(STATS_URI);
    await vscode.window.showTextDocument(doc, { preview: false });
  };

  const toggle = async () => {
    const cfg = vscode.workspace.getConfiguration("specLsp");
    await cfg.update("enabled", !cfg.get<boolean>("enabled", true), vscode.ConfigurationTarget.Global);
  };

  const record = async () => {
    if (srv.shared) {
      void vscode.window.showErrorMessage("spec-lsp: recording needs a server the extension starts; clear specLsp.server.address first.");
      return;
    }
    if (recording) {
      const file = recording;
      recording = undefined;
      status.setRecording(undefined);
      await srv.restart();
      void vscode.window.showInformationMessage(`spec-lsp: session saved to ${file}. Replay: spec-lsp replay ${file}`);
      return;
    }
    recording = recordPath(context.globalStorageUri);
    status.setRecording(recording);
    await srv.restart(recording);
    void vscode.window.showInformationMessage(
      `spec-lsp: recording this session to ${recording}; run the command again to stop.`,
    );
  };

  context.subscriptions.push(
    output,
    status,
    view,
    srv,
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, view),
    vscode.commands.registerCommand("spec-lsp.showStats", showStats),
    vscode.commands.registerCommand("spec-lsp.toggle", toggle),
    vscode.commands.registerCommand("spec-lsp.restart", () => srv.restart(recording)),
    vscode.commands.registerCommand("spec-lsp.recordSession", record),
    vscode.commands.registerCommand("spec-lsp.menu", () => showMenu(nextEdits.isVisible)),
    vscode.commands.registerCommand("spec-lsp.toggleLanguage", toggleActiveLanguage),
    vscode.commands.registerCommand("spec-lsp.toggleAutoTrigger", toggleAutoTrigger),
    vscode.commands.registerCommand("spec-lsp.pickPreset", () => pickPreset(() => resolveServer(consent))),
    vscode.commands.registerCommand("spec-lsp.showLog", () => output.show()),
    vscode.commands.registerCommand("spec-lsp.suggest", () => vscode.commands.executeCommand("editor.action.inlineSuggest.trigger")),
    nextEdits,
    new EditorDefinitions({ client: () => srv.languageClient, log: (line) => output.info(line) }),
    srv.onDidOfferCompletion(({ document, version, offset }) => nextEdits.completionOffered(document, version, offset)),
    vscode.commands.registerCommand("specLsp.acceptNextEdit", () => nextEdits.accept()),
    vscode.commands.registerCommand("specLsp.dismissNextEdit", () => nextEdits.dismiss()),
    vscode.commands.registerCommand("specLsp.toggleNextEdit", () => nextEdits.toggle()),
    vscode.commands.registerCommand("specLsp.hideInlineSuggestion", () => nextEdits.hideCompletion()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration("specLsp")) return;
      if (needsRestart(e)) void srv.restart(recording);
      else srv.configurationChanged(recording);
    }),
  );
  void srv.start(); // not awaited: activation must not wait on the server
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
