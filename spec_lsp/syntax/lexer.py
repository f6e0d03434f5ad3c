"""A small bracket, string and comment scanner for completion text.

It works on a few hundred characters of model output, so it must be cheap and never fail. It
knows each language's comment and quote syntax (from `LanguageSpec`) and nothing about grammar:
it reports, per line, the bracket depth relative to the start of the text, and the places where
the text closes something it did not open ("escapes": a bracket or string opened before the
cursor). Those drive the duplicate-closer and end-of-unit cuts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spec_lsp.syntax.languages import LanguageSpec

OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {")": "(", "]": "[", "}": "{"}


@dataclass
class Line:
    start: int  # offset of the line's first character in the scanned text
    end: int  # offset of its newline (or the end of the text)
    depth: int  # bracket depth at its start, relative to the text's start (negative: escaped)
    in_string: bool  # starts inside a string or block comment
    indent: int | None  # width of its leading whitespace (tabs count 4); None when blank


@dataclass
class Escape:
    pos: int  # offset of the closing character
    char: str  # the bracket or quote that closed something opened before the text


@dataclass
class Scan:
    lines: list[Line] = field(default_factory=list)
    escapes: list[Escape] = field(default_factory=list)
    boundaries: list[int] = field(default_factory=list)  # offsets just after `)]};` in code
    end_string: str | None = None  # the quote still open at the end
    end_comment: bool = False  # a line comment or block comment still open at the end
    end_depth: int = 0
    escaped_brackets: int = 0  # closers that closed brackets opened before the text
    open_brackets: list[str] = field(default_factory=list)  # still open at the end, innermost last


def indent_width(line: str) -> int:
    width = 0
    for ch in line:
        if ch == " ":
            width += 1
        elif ch == "\t":
            width += 4
        else:
            break
    return width


def _match_quote(spec: LanguageSpec, text: str, i: int) -> str | None:
    for quote in spec.quotes:
        if text.startswith(quote, i):
            if quote == "'" and spec.strict_char_quote and not _is_char_literal(text, i):
                return None
            return quote
    return None


def _is_char_literal(text: str, i: int) -> bool:
    # 'x' or '\n' / '\u{..}': a lifetime ('a) has no closing quote right after one character.
    if text.startswith("\\", i + 1):
        return True
    return text.startswith("'", i + 2)


def scan(text: str, spec: LanguageSpec, start_string: str | None = None) -> Scan:
    """Scans `text`, which starts inside a string delimited by `start_string` when given."""
    out = Scan()
    stack: list[str] = []
    string = start_string
    outer_string = start_string is not None  # the open string belongs to the prefix
    block = line_comment = False
    line_start, line_depth, line_in_string = 0, 0, string is not None
    i, n = 0, len(text)
    special = _specials(spec)
    while i < n:
        ch = text[i]
        if string is None and not block and not line_comment and ch not in special:
            i += 1  # plain code: most characters
            continue
        if ch == "\n":
            _close_line(out, text, line_start, i, line_depth, line_in_string)
            line_comment = False
            if string is not None and string not in spec.multiline_quotes:
                string, outer_string = None, False  # a one-line string ends with its line
            line_start, line_depth = i + 1, len(stack) - out.escaped_brackets
            line_in_string = string is not None or block
            i += 1
            continue
        if line_comment:
            i = n if (newline := text.find("\n", i)) < 0 else newline  # skip to the line's end
        elif block:
            closing = spec.block_comment[1] if spec.block_comment else ""
            block = not text.startswith(closing, i)
            i += 1 if block else len(closing)
        elif string is not None:
            if ch == "\\":
                i += 1 if text.startswith("\n", i + 1) else 2
            elif text.startswith(string, i):
                if outer_string:
                    out.escapes.append(Escape(i, string))
                    outer_string = False
                i += len(string)
                string = None
            else:
                i += 1
        else:
            i = _code_char(text, i, spec, stack, out)
            if i < 0:  # sentinel from _code_char: comment or string starts at -i - 1
                i = -i - 1
                quote = _match_quote(spec, text, i)
                if quote is not None:
                    string = quote
                    i += len(quote)
                elif spec.block_comment and text.startswith(spec.block_comment[0], i):
                    block = True
                    i += len(spec.block_comment[0])
                else:
                    line_comment = True
                    i += 1
    _close_line(out, text, line_start, n, line_depth, line_in_string)
    out.end_string, out.end_comment = string, block or line_comment
    out.end_depth = len(stack) - out.escaped_brackets
    out.open_brackets = stack
    return out


_SPECIALS: dict[LanguageSpec, frozenset[str]] = {}


def _specials(spec: LanguageSpec) -> frozenset[str]:
    """The characters that may start something the scanner tracks (the rest is skipped)."""
    found = _SPECIALS.get(spec)
    if found is None:
        markers = [*spec.quotes, *spec.line_comments]
        if spec.block_comment is not None:
            markers.append(spec.block_comment[0])
        chars = set(OPENERS) | set(CLOSERS) | {";", "\n", '"', "'", "`"}
        found = frozenset(chars | {m[0] for m in markers if m})
        _SPECIALS[spec] = found
    return found


def _code_char(text: str, i: int, spec: LanguageSpec, stack: list[str], out: Scan) -> int:
    """Handles one code character; returns the next offset, or -(i + 1) when a string or comment
    starts at i."""
    ch = text[i]
    if ch in OPENERS:
        stack.append(ch)
    elif ch in CLOSERS:
        if stack:
            stack.pop()
        else:
            out.escapes.append(Escape(i, ch))
            out.escaped_brackets += 1
        out.boundaries.append(i + 1)
    elif ch == ";":
        out.boundaries.append(i + 1)
    elif (
        ch in "\"'`"
        and _match_quote(spec, text, i) is not None
        or any(text.startswith(c, i) for c in spec.line_comments)
        or spec.block_comment is not None
        and text.startswith(spec.block_comment[0], i)
    ):
        return -(i + 1)
    return i + 1


def _close_line(out: Scan, text: str, start: int, end: int, depth: int, in_string: bool) -> None:
    body = text[start:end]
    indent = None if not body.strip() else indent_width(body)
    out.lines.append(Line(start, end, depth, in_string, indent))
