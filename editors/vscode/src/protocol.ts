// The spec-lsp/... methods of docs/protocol.md, as the extension sees them.

export const StatusRequest = "spec-lsp/status";
export const StatsRequest = "spec-lsp/stats";
export const DidShow = "spec-lsp/didShowCompletion";
export const DidPartiallyAccept = "spec-lsp/didPartiallyAcceptCompletion";
export const DidMoveCursor = "spec-lsp/didMoveCursor";
/** Executed by each suggestion's command; the language client forwards it as workspace/executeCommand. */
export const AcceptCommand = "spec-lsp.didAcceptCompletion";

// Next edits, in the shape of the Copilot language server's (docs/protocol.md).
export const InlineEditRequest = "textDocument/copilotInlineEdit";
export const DidShowInlineEdit = "textDocument/didShowInlineEdit";
export const DidRejectInlineEdit = "spec-lsp/didRejectInlineEdit";
/** Each next edit's command: the client runs it after applying the edit (workspace/executeCommand). */
export const AcceptInlineEditCommand = "spec-lsp.didAcceptInlineEdit";

export interface LspPosition {
  line: number;
  character: number;
}

/** One edit of a textDocument/copilotInlineEdit answer; positions in UTF-16 code units. */
export interface InlineEdit {
  text: string;
  textDocument: { uri: string; version: number };
  range: { start: LspPosition; end: LspPosition };
  command?: { title: string; command: string; arguments?: unknown[] };
}

export interface Status {
  state: "loading" | "ready" | "failed" | "disabled";
  preset: string;
  device: string;
  error: string | null;
  target: string;
  draft: string | null;
  /** A remote preset's engine (null for a local one); `message` says why while it fails. */
  engine?: Engine | null;
}

export interface Engine {
  remote: string;
  available: boolean;
  message: string | null;
}

export interface Percentiles {
  p50: number | null;
  p90: number | null;
  p99: number | null;
}

export interface Stats {
  requests: number;
  answered: number;
  cancelled: number;
  empty: number;
  cacheHits: number;
  typedThrough: number;
  shown: number;
  accepted: number;
  partiallyAccepted: number;
  acceptedChars: number;
  latencyMs: Record<string, Percentiles>;
  acceptance: number | null;
  kvReuse: Record<string, number | null>;
  model: Record<string, string | null>;
  lastLatencyMs: number | null;
  [key: string]: unknown;
}

/** The suggestion id carried in the item's command arguments (`[{"id": ...}]`). */
export function suggestionId(args: unknown[] | undefined): string | undefined {
  const first = args?.[0];
  if (first && typeof first === "object" && "id" in first) {
    const id = first.id;
    return typeof id === "string" ? id : undefined;
  }
  return undefined;
}
