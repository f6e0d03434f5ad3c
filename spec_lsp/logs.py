"""The server's log as `spec-lsp serve` writes it (stderr, which editors keep, or `--log-file`):
one line per record, which nothing a client sends can forge, in a file only its owner reads.

A client chooses strings that reach log lines: a method name, a document's URI, text quoted by an
error. Written raw, a newline in one starts a line of the client's making ("... ERROR ..."), and
an escape sequence rewrites a terminal. So `OneLineFormatter` writes every character of a message
that is not printable as its Python escape (`printable`: `\\n`, `\\x1b`, `\\u2028`), and
indents every further line of a record (a traceback's), so a line that starts at its first column
is always the start of a record the server wrote. The log file, which at DEBUG holds every
document's text, is created 0600 and never through a symbolic link (`owner_file`).

Knows nothing of LSP; `commands/serve.py` sets it up.
"""

from __future__ import annotations

import logging
from typing import IO

from spec_lsp.owner_file import open_owner_only

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
CONTINUED = "    "  # before each further line of a record: only a record's first line is flush


def printable(text: str) -> str:
    """`text` with each character that is not printable (line and paragraph breaks, control
    characters, escape sequences) written as its Python escape, so it stays on one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class OneLineFormatter(logging.Formatter):
    """FORMAT with the message made `printable` and a traceback's lines indented by CONTINUED."""

    def __init__(self) -> None:
        super().__init__(FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        record.message = printable(record.message)
        return super().formatMessage(record)

    def formatException(self, ei: object) -> str:  # noqa: N802
        return _continued(super().formatException(ei))  # type: ignore[arg-type]

    def formatStack(self, stack_info: str) -> str:  # noqa: N802
        return _continued(super().formatStack(stack_info))


def _continued(text: str) -> str:
    return "\n".join(CONTINUED + printable(line) for line in text.split("\n"))


def open_log_file(path: str) -> IO[str]:
    """The log file, appended to: 0600, its owner's, never a symbolic link (OSError if not)."""
    return open_owner_only(path, append=True)
