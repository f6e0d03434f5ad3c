"""`spec-lsp serve`: run the language server over stdio (default), or as a shared server on TCP or
a Unix socket (several clients at once, admitted by token: docs/shared-server.md)."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sys
from typing import NoReturn

from spec_lsp import access, logs, transport
from spec_lsp.config import Options


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run the language server (stdio by default)",
        description="Serve inline completions over LSP. Logs go to stderr or --log-file.",
    )
    p.add_argument(
        "--preset",
        default=Options.preset,
        help="model pair: a preset name (spec-lsp models list), a .toml file, or tiny",
    )
    p.add_argument(
        "--device",
        default="auto",
        choices=("auto", "cpu", "cuda"),
        help="where the models run; auto: CUDA when torch sees a GPU, else the CPU",
    )
    p.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="let transformers run the Python code a model ships (only for models you trust; "
        "no editor can turn this on)",
    )
    p.add_argument(
        "--allow-client-presets",
        metavar="KINDS",
        default="",
        help="let a client switch to these presets beyond local ones: remote (prompts go to a "
        "remote engine), download (models not on this machine yet), or remote,download",
    )
    _register_shared(p)
    p.add_argument("--log-file", metavar="PATH", help="write logs here instead of stderr")
    p.add_argument(
        "--log-level",
        default="INFO",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="the least severe level logged (DEBUG: a line per generation, for the benches)",
    )
    p.set_defaults(func=serve)


def _register_shared(p: argparse.ArgumentParser) -> None:
    """The arguments of a shared server: where it listens, its token, when it ends."""
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--tcp",
        metavar="HOST:PORT",
        help="a shared server on TCP instead of stdio (port 0: a free one); clients need the token",
    )
    where.add_argument(
        "--socket",
        metavar="PATH",
        help="a shared server on a Unix socket created 0600 (a token only if one is given)",
    )
    p.add_argument(
        "--token-file",
        metavar="PATH",
        help=f"the token clients must present (else ${access.TOKEN_ENV}; "
        "on TCP, else a new one, printed and written for local editors)",
    )
    p.add_argument(
        "--idle-exit",
        metavar="SECONDS",
        type=float,
        default=0.0,
        help="a shared server ends once no client has been connected for this long (0: never; "
        "the editors pass it when they start one on first use)",
    )


def parse_tcp(value: str) -> tuple[str, int]:
    """HOST:PORT, [IPv6]:PORT or PORT; the host is 127.0.0.1 unless one is named."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "", value
    return host.strip("[]") or "127.0.0.1", int(port)


def setup_logging(level: str, log_file: str | None) -> None:
    """One line per record whatever a client sent (`logs`); a log file 0600, never a link."""
    stream = logs.open_log_file(log_file) if log_file else sys.stderr
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.OneLineFormatter())
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
    from spec_lsp.trust import allow_client_presets

    try:
        allow_client_presets(getattr(args, "allow_client_presets", ""), args.preset)
    except ValueError as exc:
        print(f"spec-lsp serve: {exc}", file=sys.stderr)
        return 2
    try:
        setup_logging(args.log_level, args.log_file)
    except OSError as exc:
        print(f"spec-lsp serve: --log-file: {exc}", file=sys.stderr)
        return 2
    from spec_lsp.server import build_server

    server = build_server(
        preset=args.preset, device=args.device, trust_remote_code=args.trust_remote_code
    )
    if tcp is None and not args.socket:
        server.start_io()
        leave(server.exit_code)
    try:
        token = access.configured_token(args.token_file)
        listener = transport.listen_tcp(*tcp) if tcp else transport.listen_unix(args.socket)
    except (access.AccessError, transport.TransportError) as exc:
        print(f"spec-lsp serve: {exc}", file=sys.stderr)
        return 1
    try:
        if tcp is not None:
            token = token or announce_token(listener)
            if not is_loopback(tcp[0]):
                logging.getLogger(__name__).warning(
                    "listening on %s: any host that can reach it can try tokens and, with the "
                    "token, read and send your documents in plain text; use 127.0.0.1 unless "
                    "you mean it",
                    listener.address,
                )
        print(f"spec-lsp: listening on {listener.address}", file=sys.stderr, flush=True)
        server.start_shared(listener.sock, token, args.idle_exit)
    finally:
        listener.close()
    return 0


def announce_token(listener: transport.Listener) -> str:
    """A new token, printed once to stderr and written 0600 for local editors (removed at exit)."""
    token = access.new_token()
    print(f"spec-lsp: TCP token: {token}", file=sys.stderr, flush=True)
    assert listener.port is not None
    path = access.token_path(listener.port)
    try:
        access.write_private(path, token)
    except (OSError, access.AccessError) as exc:
        logging.getLogger(__name__).warning("could not write the token to %s: %s", path, exc)
    else:
        listener.remove_at_close.append(path)
        print(f"spec-lsp: token file: {path}", file=sys.stderr, flush=True)
    return token


def leave(code: int) -> NoReturn:
    """Ends the process without interpreter shutdown: the stdin reader thread may still block in
    a read, and finalizing stdin under it would abort the process instead of exiting cleanly."""
    logging.shutdown()
    sys.stderr.flush()
    os._exit(code)
