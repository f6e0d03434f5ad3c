"""Every relative link and image in the project's Markdown resolves to a file of the repository
(issue 42 item 9: editors/nvim/README.md showed `docs/nvim-ghost-text.png`, relative to its own
folder, where there is none). Anchors and web addresses are not checked."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
SKIPPED = ("node_modules", ".venv", ".git", ".pytest_cache", "spec_lsp.egg-info")


def markdown_files() -> list[Path]:
    return [
        p
        for p in sorted(ROOT.rglob("*.md"))
        if not any(part in SKIPPED for part in p.relative_to(ROOT).parts)
    ]


def broken_links(path: Path, text: str) -> list[str]:
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # https:, mailto:, an anchor in the same file
        if not (path.parent / target.split("#", 1)[0]).exists():
            broken.append(target)
    return broken


def test_every_relative_link_in_the_markdown_resolves() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {target}"
        for path in markdown_files()
        for target in broken_links(path, path.read_text(encoding="utf-8"))
    ]
    assert found == [], "links to nothing: " + "; ".join(found)


def test_the_check_finds_an_image_relative_to_the_wrong_folder() -> None:
    nvim = ROOT / "editors" / "nvim" / "README.md"
    assert broken_links(nvim, "![x](docs/nvim-ghost-text.png)") == ["docs/nvim-ghost-text.png"]
    assert broken_links(nvim, "![x](../../docs/nvim-ghost-text.png) [a](#b) [c](https://x)") == []


def test_the_vscode_readme_links_nowhere_outside_the_extension() -> None:
    """The .vsix carries editors/vscode/README.md alone, and vsce refuses to pack a relative
    link without a repository to rewrite it against (`make vsix` failed on one): web
    addresses and anchors only."""
    path = ROOT / "editors" / "vscode" / "README.md"
    relative = [
        target
        for target in LINK.findall(path.read_text(encoding="utf-8"))
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")
    ]
    assert relative == []
