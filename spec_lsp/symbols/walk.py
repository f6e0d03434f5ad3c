"""The files of a workspace worth indexing: source files of a tagged language, under the
workspace's roots, that no `.gitignore` on the way excludes and that the caller admits (never a
private file), up to a number of files and a size per file.

`.gitignore` patterns are read as git does for the common forms: `name`, `dir/`, `/anchored`,
`*.ext`, `**/x`, `a/**`, and `!negation`, each relative to the folder of its `.gitignore`; the
`.git` folder and `node_modules` are never walked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from spec_lsp.syntax.tagger import tagged_glob, tagged_language

MAX_FILE_BYTES = 512 * 1024  # a larger file is generated or data, not code a person calls
WATCHED_GLOB = tagged_glob()  # the files whose changes on disk the index wants to hear of
NEVER = {".git", "node_modules", ".hg", ".svn", "__pycache__"}


@dataclass(frozen=True)
class Rule:
    base: str  # the folder of its .gitignore
    pattern: re.Pattern[str]
    negated: bool
    dir_only: bool


def _rule(base: str, line: str) -> Rule | None:
    line = line.rstrip("\n").rstrip()
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    line = line[1:] if negated else line
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    anchored = "/" in line
    line = line.lstrip("/")
    glob = _regex(line)
    if not anchored:
        glob = "(?:.*/)?" + glob
    return Rule(base, re.compile(glob), negated, dir_only)


def _regex(glob: str) -> str:
    """A gitignore glob as a regular expression: `**/` any folders, `/**` anything below, `*` and
    `?` within one name, `[...]` a class."""
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (close := glob.find("]", i + 1)) > i:
            out.append("[" + glob[i + 1 : close].replace("!", "^", 1) + "]")
            i = close + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out) + "(?:/.*)?"  # a folder's pattern takes what lies in it


def read_gitignore(folder: str) -> list[Rule]:
    try:
        with open(os.path.join(folder, ".gitignore"), encoding="utf-8", errors="replace") as f:
            return [r for line in f if (r := _rule(folder, line)) is not None]
    except OSError:
        return []


def ignored(rules: list[Rule], path: str, is_dir: bool) -> bool:
    """Whether the last rule that matches `path` ignores it (git's order: later rules win)."""
    verdict = False
    for rule in rules:
        rel = os.path.relpath(path, rule.base).replace(os.sep, "/")
        if rel.startswith("..") or (rule.dir_only and not is_dir):
            continue
        if rule.pattern.fullmatch(rel):
            verdict = not rule.negated
    return verdict


def source_files(root: str, admits: Callable[[str], bool], max_files: int) -> Iterator[str]:
    """The files of `root` to index, folders in sorted order (top-level files first)."""
    stack: list[tuple[str, list[Rule]]] = [(root, [])]
    found = 0
    while stack:
        folder, inherited = stack.pop()
        rules = inherited + read_gitignore(folder)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        subfolders = []
        for entry in entries:
            if entry.is_symlink() or entry.name in NEVER:
                continue
            if entry.is_dir():
                if not ignored(rules, entry.path, True):
                    subfolders.append((entry.path, rules))
            elif _wanted(entry, rules, admits):
                yield entry.path
                found += 1
                if found >= max_files:
                    return
        stack.extend(reversed(subfolders))


def _wanted(entry: os.DirEntry[str], rules: list[Rule], admits: Callable[[str], bool]) -> bool:
    if not tagged_language(entry.name) or ignored(rules, entry.path, False):
        return False
    try:
        small = entry.stat().st_size <= MAX_FILE_BYTES
    except OSError:
        return False
    return small and admits(entry.path)
