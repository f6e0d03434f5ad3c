"""The session format, version 1: a JSON Lines file of what an editor sent to the server, timed.

Line 1 is the header, every other line one message: `{"t": <ms since the session began>, "msg":
<the JSON-RPC message exactly as sent>}`. This module reads, writes and validates it; it knows
nothing about servers or timing beyond the numbers in the file. docs/sessions.md documents it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

FORMAT = "spec-lsp-session"
VERSION = 1
ENCODINGS = ("utf-8", "utf-16", "utf-32")
# Messages an editor sends that the replayer does itself: never part of a session.
LIFECYCLE = frozenset({"initialize", "initialized", "shutdown", "exit"})
COMPLETION_METHODS = frozenset({"textDocument/inlineCompletion", "textDocument/completion"})
REPLAYED_METHODS = COMPLETION_METHODS | {
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didClose",
}

Message = dict[str, Any]


class SessionFormatError(ValueError):
    """A session file that does not follow the format; the message names the line."""


@dataclass
class Header:
    language_id: str
    uri: str
    source: str = ""
    position_encoding: str = "utf-16"
    extra: dict[str, Any] = field(default_factory=dict)  # unknown keys, kept on rewrite

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"format": FORMAT, "version": VERSION}
        d.update(languageId=self.language_id, uri=self.uri, source=self.source)
        if self.position_encoding != "utf-16":
            d["positionEncoding"] = self.position_encoding
        d.update(self.extra)
        return d

    @classmethod
    def from_json(cls, d: Any) -> Header:
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise SessionFormatError(f'line 1: not a header with "format": "{FORMAT}"')
        if d.get("version") != VERSION:
            raise SessionFormatError(f"line 1: version {d.get('version')!r}, expected {VERSION}")
        for key in ("languageId", "uri"):
            if not isinstance(d.get(key), str):
                raise SessionFormatError(f"line 1: {key!r} must be a string")
        encoding = d.get("positionEncoding", "utf-16")
        if encoding not in ENCODINGS:
            raise SessionFormatError(f"line 1: positionEncoding {encoding!r} not in {ENCODINGS}")
        known = {"format", "version", "languageId", "uri", "source", "positionEncoding"}
        return cls(
            language_id=d["languageId"],
            uri=d["uri"],
            source=str(d.get("source", "")),
            position_encoding=encoding,
            extra={k: v for k, v in d.items() if k not in known},
        )


@dataclass
class Event:
    t: float  # milliseconds since the session began
    msg: Message

    @property
    def method(self) -> str | None:
        method = self.msg.get("method")
        return method if isinstance(method, str) else None

    @property
    def is_request(self) -> bool:
        return "id" in self.msg and self.method is not None


@dataclass
class Session:
    header: Header
    events: list[Event]
    name: str = ""  # file stem, for reports

    @property
    def duration_ms(self) -> float:
        return self.events[-1].t if self.events else 0.0


def validate_event(event: Any, line: int, last_t: float) -> Event:
    """Checks one message line; returns it as an Event."""
    if not isinstance(event, dict) or set(event) != {"t", "msg"}:
        raise SessionFormatError(f'line {line}: expected an object with exactly "t" and "msg"')
    t, msg = event["t"], event["msg"]
    if isinstance(t, bool) or not isinstance(t, int | float) or not 0 <= t < math.inf:
        raise SessionFormatError(f"line {line}: t must be a number >= 0")
    if t < last_t:
        raise SessionFormatError(f"line {line}: t goes back in time ({t} < {last_t})")
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        raise SessionFormatError(f"line {line}: msg must be a JSON-RPC 2.0 object")
    method = msg.get("method")
    if not isinstance(method, str):
        raise SessionFormatError(f"line {line}: msg has no method (responses are not recorded)")
    if method in LIFECYCLE:
        raise SessionFormatError(f"line {line}: {method} is done by the replayer, not recorded")
    if "id" in msg and not isinstance(msg["id"], int | str):
        raise SessionFormatError(f"line {line}: a request id must be a number or a string")
    problem = params_problem(method, msg.get("params"))
    if problem:
        raise SessionFormatError(f"line {line}: {method}: {problem}")
    return Event(t=float(t), msg=msg)


def _is_position(p: Any) -> bool:
    return isinstance(p, dict) and all(
        isinstance(p.get(k), int) and not isinstance(p.get(k), bool) and p[k] >= 0
        for k in ("line", "character")
    )


def params_problem(method: str, params: Any) -> str | None:
    """What is wrong with the params of a message the replayer reads (documents, positions)."""
    if method not in REPLAYED_METHODS:
        return None
    doc = params.get("textDocument") if isinstance(params, dict) else None
    if not isinstance(doc, dict) or not isinstance(doc.get("uri"), str):
        return "params.textDocument.uri must be a string"
    if method == "textDocument/didOpen" and not isinstance(doc.get("text"), str):
        return "params.textDocument.text must be a string"
    if method == "textDocument/didChange":
        changes = params.get("contentChanges")
        if not isinstance(changes, list):
            return "params.contentChanges must be a list"
        for change in changes:
            if not isinstance(change, dict) or not isinstance(change.get("text"), str):
                return "each content change needs a string text"
            rng = change.get("range")
            if rng is not None and not (
                isinstance(rng, dict)
                and _is_position(rng.get("start"))
                and _is_position(rng.get("end"))
            ):
                return "a content change's range needs start and end positions"
    if method in COMPLETION_METHODS and not _is_position(params.get("position")):
        return "params.position must be {line, character} with integers >= 0"
    return None


def parse_session(lines: Iterable[str], name: str = "") -> Session:
    header: Header | None = None
    events: list[Event] = []
    request_ids: set[Any] = set()
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SessionFormatError(f"line {number}: not JSON ({exc.msg})") from None
        except RecursionError:
            raise SessionFormatError(f"line {number}: JSON nested too deeply") from None
        if header is None:
            try:
                header = Header.from_json(obj)
            except SessionFormatError as exc:  # the header is the first line that is not blank
                raise SessionFormatError(str(exc).replace("line 1:", f"line {number}:")) from None
            continue
        event = validate_event(obj, number, events[-1].t if events else 0.0)
        if event.is_request:
            if event.msg["id"] in request_ids:
                raise SessionFormatError(f"line {number}: request id {event.msg['id']!r} reused")
            request_ids.add(event.msg["id"])
        events.append(event)
    if header is None:
        raise SessionFormatError("empty file: no header")
    return Session(header=header, events=events, name=name)


def read_session(path: str | Path) -> Session:
    path = Path(path)
    with path.open(encoding="utf-8") as f:
        try:
            return parse_session(f, name=path.stem)
        except SessionFormatError as exc:
            raise SessionFormatError(f"{path}: {exc}") from None
        except UnicodeDecodeError as exc:
            raise SessionFormatError(f"{path}: not UTF-8 text ({exc.reason})") from None


def dump_lines(session: Session) -> Iterator[str]:
    yield json.dumps(session.header.to_json(), ensure_ascii=False)
    for event in session.events:
        yield dump_event(event)


def dump_event(event: Event) -> str:
    t: float | int = int(event.t) if float(event.t).is_integer() else round(event.t, 3)
    return json.dumps({"t": t, "msg": event.msg}, ensure_ascii=False, separators=(",", ":"))


def write_session(path: str | Path, session: Session) -> None:
    with Path(path).open("w", encoding="utf-8") as f:
        for line in dump_lines(session):
            f.write(line + "\n")


class SessionWriter:
    """Appends events as they happen (the recorder), so a killed editor still leaves a session.

    The header needs the document's uri and languageId, so events are held until the first
    didOpen (or until `close`, which falls back to an empty uri).
    """

    def __init__(self, stream: IO[str], source: str = "") -> None:
        self._stream = stream
        self._source = source
        self._pending: list[Event] = []
        self._header_written = False
        self.position_encoding = "utf-16"  # the recorder sets it from the server's answer

    def add(self, event: Event) -> None:
        if not self._header_written:
            if event.method == "textDocument/didOpen":
                doc = event.msg.get("params", {}).get("textDocument", {})
                self._write_header(str(doc.get("uri", "")), str(doc.get("languageId", "")))
            else:
                self._pending.append(event)
                return
        self._stream.write(dump_event(event) + "\n")
        self._stream.flush()

    def _write_header(self, uri: str, language_id: str) -> None:
        header = Header(language_id, uri, self._source, self.position_encoding)
        self._stream.write(json.dumps(header.to_json(), ensure_ascii=False) + "\n")
        self._header_written = True
        pending, self._pending = self._pending, []
        for event in pending:
            self._stream.write(dump_event(event) + "\n")
        self._stream.flush()

    def close(self) -> None:
        if not self._header_written:
            self._write_header("", "")
        self._stream.flush()
