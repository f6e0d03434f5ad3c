// What the status bar item says, as a pure function of what the server told the extension: no
// vscode import, so test/unit.ts checks it in plain Node. status.ts renders the answer.
import type { Stats, Status } from "./protocol";

export interface StatusText {
  text: string;
  tooltip: string;
  /** The item's background: error (no suggestions until fixed), warning (degraded), or none. */
  severity: "error" | "warning" | undefined;
}

export interface StatusInputs {
  status: Status | undefined;
  stats: Stats | undefined;
  progress: string | undefined;
  problem: string | undefined;
}

export function describe({ status: s, stats: st, progress, problem }: StatusInputs): StatusText {
  if (problem) return { text: "$(error) spec-lsp", tooltip: problem, severity: "error" };
  if (progress !== undefined || !s) {
    const text = `$(loading~spin) spec-lsp ${progress ?? "starting"}`;
    return { text, tooltip: "spec-lsp: loading the models", severity: undefined };
  }
  const model = `${s.preset} on ${s.device}: ${s.target}${s.draft ? ` + draft ${s.draft}` : ""}`;
  switch (s.state) {
    case "loading":
      return { text: "$(loading~spin) spec-lsp loading", tooltip: `Loading ${model}`, severity: undefined };
    case "failed": {
      const tooltip = `Model load failed: ${s.error ?? "unknown error"}\n\`spec-lsp doctor\` says what is missing.`;
      return { text: "$(error) spec-lsp failed", tooltip, severity: "error" };
    }
    case "disabled": {
      const tooltip = "Suggestions are off (spec-lsp: Toggle suggestions)";
      return { text: "$(circle-slash) spec-lsp off", tooltip, severity: undefined };
    }
  }
  // A remote preset stays "ready" while its engine fails; the engine object says why.
  if (s.engine && !s.engine.available) {
    const why = s.engine.message ?? s.error ?? `${s.engine.remote} does not answer`;
    return {
      text: "$(warning) spec-lsp engine down",
      tooltip: `The engine fails, so suggestions are empty until it answers again: ${why}\n${model}`,
      severity: "warning",
    };
  }
  if (!st || st.lastLatencyMs === null || st.lastLatencyMs === undefined || st.shown === 0) {
    return { text: `$(zap) spec-lsp ${s.preset}`, tooltip: `Ready: ${model}`, severity: undefined };
  }
  const ms = Math.round(st.lastLatencyMs);
  const accepted = st.accepted + (st.partiallyAccepted ?? 0);
  const draft = typeof st.acceptance === "number" ? `, draft tokens accepted ${pct(st.acceptance)}` : "";
  return {
    text: `$(zap) spec-lsp ${ms} ms · ${accepted}/${st.shown} accepted`,
    tooltip:
      `Last suggestion took ${ms} ms; ${accepted} of ${st.shown} shown ` +
      `suggestions accepted (${st.partiallyAccepted ?? 0} partly)${draft}.\n${model}`,
    severity: undefined,
  };
}

export function pct(x: number): string {
  return `${Math.round(x * 100)}%`;
}
