// A second language server in VS Code for the spec-lsp e2e test (tests/editors/test_vscode_e2e.py
// packs this folder as a .vsix): it starts tests/editors/fake_definition_server.py
// ($SPEC_LSP_FAKE_DEFINITIONS: a JSON list, the command line) and answers VS Code's definition
// and hover requests for Python through it, over LSP's framing on stdio, with no dependency.
"use strict";
const cp = require("child_process");
const vscode = require("vscode");

function client(argv) {
  const child = cp.spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const waiting = new Map();
  let buffer = Buffer.alloc(0);
  let nextId = 1;
  child.stdout.on("data", (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      const end = buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      const length = Number(/Content-Length: (\d+)/i.exec(buffer.subarray(0, end).toString())[1]);
      if (buffer.length < end + 4 + length) return;
      const message = JSON.parse(buffer.subarray(end + 4, end + 4 + length).toString());
      buffer = buffer.subarray(end + 4 + length);
      const done = waiting.get(message.id);
      waiting.delete(message.id);
      if (done) done(message.result);
    }
  });
  const send = (message) => {
    const body = Buffer.from(JSON.stringify({ jsonrpc: "2.0", ...message }));
    child.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
    child.stdin.write(body);
  };
  return {
    request: (method, params) =>
      new Promise((resolve) => {
        const id = nextId++;
        waiting.set(id, resolve);
        send({ id, method, params });
      }),
    notify: (method, params) => send({ method, params }),
    stop: () => child.kill(),
  };
}

function activate(context) {
  const argv = JSON.parse(process.env.SPEC_LSP_FAKE_DEFINITIONS || "[]");
  if (!argv.length) return;
  const server = client(argv);
  const ready = server.request("initialize", { processId: process.pid, rootUri: null, capabilities: {} });
  const ask = async (method, document, position) => {
    await ready;
    const textDocument = { uri: document.uri.toString(), languageId: "python", version: document.version, text: document.getText() };
    server.notify("textDocument/didOpen", { textDocument }); // the whole text, before each question
    const at = { line: position.line, character: position.character };
    return server.request(method, { textDocument: { uri: textDocument.uri }, position: at });
  };
  const range = (r) => new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character);
  context.subscriptions.push(
    vscode.languages.registerDefinitionProvider("python", {
      provideDefinition: async (document, position) => {
        const found = await ask("textDocument/definition", document, position);
        return found ? new vscode.Location(vscode.Uri.parse(found.uri), range(found.range)) : undefined;
      },
    }),
    vscode.languages.registerHoverProvider("python", {
      provideHover: async (document, position) => {
        const found = await ask("textDocument/hover", document, position);
        return found ? new vscode.Hover(new vscode.MarkdownString(found.contents.value)) : undefined;
      },
    }),
    { dispose: () => server.stop() },
  );
}

module.exports = { activate, deactivate: () => undefined };
