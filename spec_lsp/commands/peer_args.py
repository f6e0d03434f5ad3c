"""Arguments with which a quality bench (`bench fim`, `bench blocks`) adds llama-server."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_llama_server_arguments(p: argparse.ArgumentParser) -> None:
    """`--llama-server`, `--gguf` and `--threads`, the same for every bench that has them."""
    p.add_argument(
        "--llama-server",
        choices=("auto", "off"),
        default="auto",
        help="rows for llama-server's /infill (auto: when its binary and --gguf exist)",
    )
    p.add_argument(
        "--gguf", type=Path, metavar="PATH", help="the GGUF llama-server serves (default: none)"
    )
    p.add_argument("--threads", type=int, metavar="N", help="torch and llama-server threads")
