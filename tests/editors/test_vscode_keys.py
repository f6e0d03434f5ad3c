"""The VS Code extension's keybindings leave VS Code's own editing keys alone.

In editors/vscode/package.json, accepting the next line of ghost text is Shift+Tab, as in
llama.vscode, not Alt+Down, which is *Move Line Down* and was shadowed whenever ghost text showed
(issue 42 item 4)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "editors" / "vscode" / "package.json"
# VS Code's default line-editing keys (Move / Copy Line Up / Down) a user keeps using with
# ghost text.
EDITING_KEYS = {"alt+up", "alt+down", "shift+alt+up", "shift+alt+down"}


def keybindings() -> list[dict[str, str]]:
    return json.loads(MANIFEST.read_text(encoding="utf-8"))["contributes"]["keybindings"]


def test_accepting_the_next_line_is_shift_tab_while_ghost_text_shows() -> None:
    [line] = [k for k in keybindings() if k["command"].endswith("acceptNextLine")]
    assert line["key"] == "shift+tab"
    assert "inlineSuggestionVisible" in line["when"] and "!inSnippetMode" in line["when"]


def test_no_binding_shadows_vs_codes_line_editing_keys() -> None:
    assert [k for k in keybindings() if k["key"] in EDITING_KEYS] == []
