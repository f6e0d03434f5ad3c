"""Who may use a shared server: its token, and the first message that must present it.

The token comes from `--token-file`, else $SPEC_LSP_TOKEN, else (on TCP) a new one written for
local editors to read (`token_path`, owner-only). `admit` checks a connection's first message:
an `initialize` of at most `MAX_FIRST_MESSAGE_BYTES` carrying `initializationOptions.token`,
compared in constant time, and hands it on with the token taken out, so the token reaches no log,
option or status. `is_http_request` tells a browser's request line from LSP framing. It knows
nothing of sockets or LSP sessions (`transport.py` applies these rules to each connection).
"""

from __future__ import annotations

import hmac
import json
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Any

TOKEN_ENV = "SPEC_LSP_TOKEN"
# The first message is read and parsed before its token is checked, so it is kept small: editors'
# `initialize` messages are a few KiB (VS Code's about 10). A larger one is refused unparsed.
MAX_FIRST_MESSAGE_BYTES = 64 * 1024
_HTTP_REQUEST = re.compile(
    rb"^\s*(?:[A-Z]+ \S+ HTTP/\d|(?:GET|POST|PUT|DELETE|HEAD|OPTIONS|PATCH|CONNECT|TRACE|PRI) )"
)


class AccessError(Exception):
    """A token setting that keeps a shared server from starting; the message says why."""


def configured_token(token_file: str | None) -> str | None:
    """The token from `--token-file` (its content, stripped), else from $SPEC_LSP_TOKEN, else
    None."""
    if token_file:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise AccessError(f"cannot read the token file {token_file}: {exc}") from None
        if not token:
            raise AccessError(f"the token file {token_file} is empty")
        return token
    return os.environ.get(TOKEN_ENV, "").strip() or None


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_path(port: int) -> Path:
    """Where a generated token is written for local editors: $XDG_RUNTIME_DIR/spec-lsp/PORT.token,
    or ~/.cache/spec-lsp/run/PORT.token without a runtime directory."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) / "spec-lsp" if runtime else Path.home() / ".cache" / "spec-lsp" / "run"
    return base / f"{port}.token"


def write_private(path: Path, text: str) -> None:
    """Writes `text` to `path` readable by the owner only (a 0700 directory, a 0600 file written
    under a fresh name and renamed over the old one)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.parent.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise AccessError(f"{path.parent} is not a directory of this user")
    os.chmod(path.parent, 0o700)
    fresh = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text + "\n")
    os.replace(fresh, path)


def admit(body: bytes, token: str | None) -> bytes | None:
    """The first message as the protocol may see it (the token taken out), or None: refused
    (one above `MAX_FIRST_MESSAGE_BYTES` too, without parsing it)."""
    if len(body) > MAX_FIRST_MESSAGE_BYTES:
        return None
    try:
        message: Any = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict):
        return None if token is not None else body
    params = message.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    given = options.pop("token", None) if isinstance(options, dict) else None
    if token is not None:
        if message.get("method") != "initialize" or not isinstance(given, str):
            return None
        if not hmac.compare_digest(_utf8(given), _utf8(token)):
            return None
    return body if given is None else json.dumps(message).encode()


def is_http_request(line: bytes) -> bool:
    """An HTTP request line (`POST / HTTP/1.1`, `GET ...`): never the start of an LSP frame."""
    return _HTTP_REQUEST.match(line) is not None


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # JSON may carry a lone surrogate
