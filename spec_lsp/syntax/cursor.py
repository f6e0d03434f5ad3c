"""What the text rules need to know about the cursor, read from the prefix and suffix strings.

Everything here is a few `rfind`/`find` calls near the cursor, never a scan of the whole file, so
it is cheap enough to build for every request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from spec_lsp.syntax.languages import LanguageSpec
from spec_lsp.syntax.lexer import OPENERS, indent_width, scan

# What may stand right of the cursor for a suggestion to still be made there (auto-closed pairs).
CLOSING_CHARS = frozenset(")]}\"'`;,:> \t")
PY_BLOCK_COLON = ":"


@dataclass(frozen=True)
class Cursor:
    line_prefix: str  # the cursor's line, up to the cursor
    line_suffix: str  # the cursor's line, from the cursor on
    prev_line: str | None  # the nearest non-blank line above the cursor's line
    next_line: str | None  # the nearest non-blank line below the cursor's line (rstripped)
    at_eof: bool  # nothing but whitespace after the cursor

    @property
    def blank_line(self) -> bool:
        return not self.line_prefix.strip() and not self.line_suffix.strip()

    @property
    def line_indent(self) -> int:
        return indent_width(self.line_prefix + self.line_suffix)


def cursor_of(prefix: str, suffix: str) -> Cursor:
    start = prefix.rfind("\n") + 1
    end = suffix.find("\n")
    line_suffix = suffix if end < 0 else suffix[:end]
    return Cursor(
        line_prefix=prefix[start:],
        line_suffix=line_suffix,
        prev_line=_prev_nonblank(prefix, start),
        next_line=None if end < 0 else _next_nonblank(suffix, end + 1),
        at_eof=not suffix.strip(),
    )


def _prev_nonblank(prefix: str, line_start: int, limit: int = 200) -> str | None:
    end = line_start - 1  # the newline ending the previous line
    for _ in range(limit):
        if end < 0:
            return None
        start = prefix.rfind("\n", 0, end) + 1
        line = prefix[start:end]
        if line.strip():
            return line.rstrip()
        end = start - 1
    return None


def _next_nonblank(suffix: str, start: int, limit: int = 200) -> str | None:
    for _ in range(limit):
        if start >= len(suffix):
            return None
        end = suffix.find("\n", start)
        end = len(suffix) if end < 0 else end
        line = suffix[start:end]
        if line.strip():
            return line.rstrip()
        start = end + 1
    return None


def code_of_line(line: str, spec: LanguageSpec) -> str:
    """The line without a trailing line comment (string-aware), rstripped."""
    if not scan(line, spec).end_comment:
        return line.rstrip()
    for pos in sorted(p for m in spec.line_comments for p in _find_all(line, m)):
        head = scan(line[:pos], spec)
        if head.end_string is None and not head.end_comment:
            return line[:pos].rstrip()
    return line.rstrip()


def _find_all(text: str, needle: str) -> list[int]:
    found, pos = [], text.find(needle)
    while pos >= 0:
        found.append(pos)
        pos = text.find(needle, pos + 1)
    return found


def opens_block(line: str, spec: LanguageSpec) -> bool:
    """Whether a line ends by opening a block or bracket, so what follows is a new body."""
    code = code_of_line(line, spec)
    if not code:
        return False
    if code[-1] in OPENERS or code.endswith("=>"):
        return True
    if spec.indent_blocks and code.endswith(PY_BLOCK_COLON):
        if not spec.block_keywords:  # YAML: any `key:`
            return True
        word = code.split(maxsplit=1)[0].rstrip(":")
        return word in spec.block_keywords
    words = code.split()
    if words[0] == "local" and len(words) > 1:  # Lua: `local function f()`
        words = words[1:]
    if spec.end_words and _END_BLOCK_TAIL.search(code):
        return True  # `each do |x|`, `for x; do`, `if x then`
    if spec.end_words and spec.grammar is not None and words[0] in _END_BLOCK_STARTS:
        return True  # Ruby, Lua, shell: `def f`, `while x`
    if spec.grammar is None:  # F#, Haskell, Scala, ...: `=`, `->`, `do`, `then` open a body
        return code.endswith(_TEXT_OPENERS) or code.split()[-1] in _TEXT_OPENER_WORDS
    return False


_END_BLOCK_STARTS = frozenset(
    {"def", "class", "module", "if", "unless", "while", "until", "for", "case", "begin"}
    | {"function", "repeat", "select"}
)
_END_BLOCK_TAIL = re.compile(r"(\bdo(\s*\|[^|]*\|)?|\bthen)$")
_TEXT_OPENERS = (":", "=", "->", "=>")
_TEXT_OPENER_WORDS = frozenset({"do", "then", "else", "where", "of", "begin", "with"})
