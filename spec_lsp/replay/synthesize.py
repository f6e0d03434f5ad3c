"""`spec-lsp replay synthesize`: sessions that retype a region of real source files.

A region (a function body in Python files, found with `ast`; a block of lines elsewhere) is
removed from the file, which is opened; then the region is typed back character by character
with human-like timing: lognormal gaps inside bursts, pauses at line ends, after punctuation and
now and then to think, and a few typos noticed and fixed with backspace. Enter inserts the
newline and the next line's indentation in one change, as an editor's auto-indent does. Every
keystroke cancels the pending request, sends the change, and asks for an inline completion, as
VS Code does. The same files and seed give the same sessions, byte for byte.
"""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spec_lsp.replay.document import position_of
from spec_lsp.replay.format import Event, Header, Session, write_session

LANGUAGES = {
    ".py": "python",
    ".js": "javascript",
    ".ts": "typescript",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".cc": "cpp",
    ".lua": "lua",
}
# Keys next to each other on a QWERTY keyboard: where typos come from.
NEIGHBOURS = {
    "a": "qsz",
    "b": "vgn",
    "c": "xdv",
    "d": "sfe",
    "e": "wrd",
    "f": "dgr",
    "g": "fht",
    "h": "gjy",
    "i": "uok",
    "j": "hku",
    "k": "jli",
    "l": "ko",
    "m": "n",
    "n": "bm",
    "o": "ipl",
    "p": "o",
    "q": "wa",
    "r": "etf",
    "s": "adw",
    "t": "ryg",
    "u": "yij",
    "v": "cb",
    "w": "qes",
    "x": "zc",
    "y": "tu",
    "z": "x",
}


@dataclass(frozen=True)
class Timing:
    key_ms: float = 140.0  # median gap between keys inside a burst
    key_sigma: float = 0.45  # lognormal spread of that gap
    line_pause: tuple[float, float, float] = (0.65, 450.0, 1600.0)  # probability, min, max ms
    punct_pause: tuple[float, float, float] = (0.3, 200.0, 700.0)
    think_pause: tuple[float, float, float] = (0.02, 800.0, 2200.0)
    typo_rate: float = 0.02  # per letter
    end_ms: float = 2500.0  # after the last keystroke, before didClose


def patient(line_pause_ms: float) -> Timing:
    """Timing of a user who, at every line's start, waits `line_pause_ms` to 1.5 times that
    for the suggestion and reads it before typing on (or accepting it, in a replay)."""
    return Timing(line_pause=(1.0, line_pause_ms, line_pause_ms * 1.5))


@dataclass(frozen=True)
class Region:
    name: str
    start: int  # str offsets into the file's text
    end: int
    first_line: int  # 1-based, for the header's source


def python_regions(text: str) -> list[Region]:
    """Function bodies, from the first statement's first character to the body's end."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    line_starts = [0]
    for line in text.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    regions = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not node.body:
            continue
        first, last = node.body[0], node.body[-1]
        if last.end_lineno is None or last.end_col_offset is None:
            continue
        start = _char_offset(text, line_starts, first.lineno, first.col_offset)
        end = _char_offset(text, line_starts, last.end_lineno, last.end_col_offset)
        regions.append(Region(node.name, start, end, first.lineno))
    return regions


def _char_offset(text: str, line_starts: list[int], lineno: int, byte_col: int) -> int:
    """ast columns count UTF-8 bytes; convert to a str offset."""
    start = line_starts[lineno - 1]
    line = text[start : line_starts[lineno] if lineno < len(line_starts) else len(text)]
    return start + len(line.encode("utf-8")[:byte_col].decode("utf-8", "ignore"))


def line_regions(text: str, lines: int = 5) -> list[Region]:
    """Fallback for other languages: blocks of `lines` non-blank lines."""
    regions, offset = [], 0
    all_lines = text.splitlines(keepends=True)
    starts = []
    for line in all_lines:
        starts.append(offset)
        offset += len(line)
    for i in range(0, max(0, len(all_lines) - lines), lines):
        block = all_lines[i : i + lines]
        if all(b.strip() for b in block):
            lead = len(block[0]) - len(block[0].lstrip())
            end = starts[i] + sum(len(b) for b in block) - 1
            regions.append(Region(f"line{i + 1}", starts[i] + lead, end, i + 1))
    return regions


class Typist:
    """Turns the text of a region into keystroke events with their times."""

    def __init__(self, rng: random.Random, timing: Timing) -> None:
        self.rng = rng
        self.timing = timing

    def _chance(self, spec: tuple[float, float, float]) -> float:
        probability, low, high = spec
        return self.rng.uniform(low, high) if self.rng.random() < probability else 0.0

    def gap_after(self, typed: str) -> float:
        t = self.timing
        gap = t.key_ms * self.rng.lognormvariate(0.0, t.key_sigma)
        if typed.startswith("\n"):
            gap += self._chance(t.line_pause)
        elif typed in "(:,=[{":
            gap += self._chance(t.punct_pause)
        return gap + self._chance(t.think_pause)

    def keystrokes(self, region: str) -> list[tuple[float, str]]:
        """(gap before, key) pairs; a key is text to insert or "\\b" for backspace."""
        keys: list[tuple[float, str]] = []
        i, last = 0, ""
        while i < len(region):
            ch = region[i]
            if ch == "\n":
                indent = len(region[i + 1 :]) - len(region[i + 1 :].lstrip(" \t"))
                key, i = region[i : i + 1 + indent], i + 1 + indent
            else:
                key, i = ch, i + 1
            if ch.isalpha() and self.rng.random() < self.timing.typo_rate:
                keys += self._typo(ch, region[i : i + 2], last)
                last = "\b"
            keys.append((self.gap_after(last) if keys else 0.0, key))
            last = key
        return keys

    def _typo(self, ch: str, after: str, last: str) -> list[tuple[float, str]]:
        """A wrong key, maybe a correct key or two more, a moment to notice, then backspaces."""
        wrong = self.rng.choice(NEIGHBOURS.get(ch.lower(), "e"))
        extra = after[: self.rng.choice((0, 0, 1, 2))]
        extra = extra if "\n" not in extra else ""
        keys = [(self.gap_after(last) if last else 0.0, wrong)]
        keys += [(self.gap_after(wrong), c) for c in extra]
        keys.append((self.rng.uniform(250.0, 600.0), "\b"))
        keys += [(self.rng.uniform(80.0, 160.0), "\b") for _ in extra]
        return keys


def _message(method: str, params: dict[str, Any], request_id: int | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0"}
    if request_id is not None:
        msg["id"] = request_id
    msg.update(method=method, params=params)
    return msg


def build_session(
    path: Path, text: str, region: Region, seed: int, timing: Timing = Timing()
) -> Session:
    language = LANGUAGES.get(path.suffix, "plaintext")
    uri = path.resolve().as_uri()
    rng = random.Random(f"{seed}:{path.name}:{region.name}:{region.start}")
    body = text[region.start : region.end]
    doc = text[: region.start] + text[region.end :]
    cursor, version, t, next_id = region.start, 1, 0.0, 1
    doc_open = {"uri": uri, "languageId": language, "version": version, "text": doc}
    events = [Event(0, _message("textDocument/didOpen", {"textDocument": doc_open}))]
    t = rng.uniform(700.0, 1200.0)
    pending: int | None = None
    for gap, key in Typist(rng, timing).keystrokes(body):
        t += gap
        ms = round(t)
        if pending is not None:
            events.append(Event(ms, _message("$/cancelRequest", {"id": pending})))
        start = cursor - 1 if key == "\b" else cursor
        lsp_range = {"start": position_of(doc, start), "end": position_of(doc, cursor)}
        inserted = "" if key == "\b" else key
        doc, cursor = doc[:start] + inserted + doc[cursor:], start + len(inserted)
        version += 1
        change = {"range": lsp_range, "rangeLength": 0 if inserted else 1, "text": inserted}
        params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}
        events.append(Event(ms, _message("textDocument/didChange", params)))
        request = {
            "textDocument": {"uri": uri},
            "position": position_of(doc, cursor),
            "context": {"triggerKind": 2, "selectedCompletionInfo": None},
        }
        events.append(Event(ms, _message("textDocument/inlineCompletion", request, next_id)))
        pending, next_id = next_id, next_id + 1
    t += timing.end_ms
    events.append(
        Event(round(t), _message("textDocument/didClose", {"textDocument": {"uri": uri}}))
    )
    source = f"synthesized from {path.name} line {region.first_line} ({region.name}), seed {seed}"
    header = Header(language_id=language, uri=uri, source=source)
    return Session(header=header, events=events, name=f"{path.stem}-{region.name}")


def pick_regions(
    path: Path,
    text: str,
    count: int,
    min_chars: int,
    max_chars: int,
    seed: int,
    names: tuple[str, ...] = (),
) -> list[Region]:
    """`count` regions of each file whose size fits, drawn with the seed; or those named."""
    regions = python_regions(text) if path.suffix == ".py" else line_regions(text)
    if names:
        return sorted((r for r in regions if r.name in names), key=lambda r: r.start)
    fitting = [r for r in regions if min_chars <= r.end - r.start <= max_chars]
    fitting.sort(key=lambda r: (r.start, r.name))
    rng = random.Random(f"{seed}:{path.name}")
    chosen = rng.sample(fitting, min(count, len(fitting)))
    return sorted(chosen, key=lambda r: r.start)


def synthesize(
    files: list[Path],
    out_dir: Path,
    seed: int = 0,
    per_file: int = 1,
    min_chars: int = 80,
    max_chars: int = 300,
    names: tuple[str, ...] = (),
    timing: Timing = Timing(),
) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for region in pick_regions(path, text, per_file, min_chars, max_chars, seed, names):
            session = build_session(path, text, region, seed, timing)
            out = out_dir / f"{session.name}.jsonl"
            write_session(out, session)
            written.append(out)
    return written
