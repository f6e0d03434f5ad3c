// Which settings go to the server, as pure functions of what VS Code's `inspect()` says: no vscode
// import, so test/unit.ts checks them in plain Node. config.ts feeds them from the workspace.

/** What `WorkspaceConfiguration.inspect(key)` returns, the parts used here. */
export interface Inspected<T = unknown> {
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}

/**
 * The value the user set for one key, or undefined when it is left at its default: only set values
 * are sent, so the server's own defaults (and `spec-lsp serve --preset FILE` in serverArgs) hold.
 * `trusted`: false in an untrusted workspace, where a restricted key takes the user's value only.
 */
export function setValue<T>(inspected: Inspected<T> | undefined, trusted = true): T | undefined {
  if (!inspected) return undefined;
  if (!trusted) return inspected.globalValue;
  return inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue;
}

/** The settings object for the server: each key the user set, none left at its default. */
export function setSettings(
  keys: readonly string[],
  inspect: (key: string) => Inspected | undefined,
  restricted: ReadonlySet<string> = new Set(),
  trusted = true,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const value = setValue(inspect(key), trusted || !restricted.has(key));
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** Keys sent before and missing now: the user removed them, which only a new server undoes. */
export function removedKeys(before: Record<string, unknown>, now: Record<string, unknown>): string[] {
  return Object.keys(before).filter((k) => !(k in now));
}

/** Whether `enabledLanguages` gives `language` suggestions (as the server reads it). */
export function languageOn(list: readonly string[], language: string): boolean {
  if (list.includes(`!${language}`)) return false;
  return list.includes("*") || list.includes(language);
}

/** `enabledLanguages` with `language` switched: `"!id"` under `"*"`, else the id added or removed. */
export function toggleLanguage(list: readonly string[], language: string): string[] {
  const on = languageOn(list, language);
  const rest = list.filter((l) => l !== language && l !== `!${language}`);
  if (list.includes("*")) return on ? [...rest, `!${language}`] : rest;
  return on ? rest : [...rest, language];
}
