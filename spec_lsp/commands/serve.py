"""`spec-lsp serve`: run the language server over stdio (default) or TCP."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sys
from typing import NoReturn

from spec_lsp.config import Options


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run the language server (stdio by default)",
        description="Serve inline completions over LSP. Logs go to stderr or --log-file.",
    )
    p.add_argument("--preset", default=Options.preset, help="model pair (models/*.toml, or tiny)")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="let transformers run the Python code a model ships (only for models you trust; "
        "no editor can turn this on)",
    )
    p.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    p.add_argument("--log-file", metavar="PATH", help="write logs here instead of stderr")
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    p.set_defaults(func=serve)


def parse_tcp(value: str) -> tuple[str, int]:
    """HOST:PORT, [IPv6]:PORT or PORT; the host is 127.0.0.1 unless one is named."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "", value
    return host.strip("[]") or "127.0.0.1", int(port)


def setup_logging(level: str, log_file: str | None) -> None:
    handler: logging.Handler = (
        logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # pygls logs every message body at INFO; keep that out unless debugging, and its errors to
    # one line (a deserialization error's traceback can quote values from the message).
    logging.getLogger("pygls").setLevel("DEBUG" if level == "DEBUG" else "WARNING")
    if level != "DEBUG":
        handler.addFilter(first_line_of_pygls_records)


def first_line_of_pygls_records(record: logging.LogRecord) -> bool:
    """Without a debug flag, no log line carries what a client sent (document text included)."""
    if record.name.startswith("pygls"):
        record.msg, record.args = record.getMessage().split("\n", 1)[0], ()
        record.exc_info, record.exc_text = None, None
    return True


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def serve(args: argparse.Namespace) -> int:
    tcp: tuple[str, int] | None = None
    if args.tcp:
        try:
            tcp = parse_tcp(args.tcp)
        except ValueError:
            print(f"spec-lsp serve: --tcp expects HOST:PORT, got {args.tcp!r}", file=sys.stderr)
            return 2
    setup_logging(args.log_level, args.log_file)
    from spec_lsp.server import build_server

    server = build_server(
        preset=args.preset, device=args.device, trust_remote_code=args.trust_remote_code
    )
    if tcp is not None:
        if not is_loopback(tcp[0]):
            logging.getLogger(__name__).warning(
                "listening on %s:%d: any host that can reach it can read and send your documents "
                "(there is no authentication); use 127.0.0.1 unless you mean it",
                *tcp,
            )
        server.start_tcp(*tcp)
        return 0
    server.start_io()
    leave(server.exit_code)


def leave(code: int) -> NoReturn:
    """Ends the process without interpreter shutdown: the stdin reader thread may still block in
    a read, and finalizing stdin under it would abort the process instead of exiting cleanly."""
    logging.shutdown()
    sys.stderr.flush()
    os._exit(code)
