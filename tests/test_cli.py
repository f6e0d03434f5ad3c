"""The `spec-lsp` command line: every area's subcommand is there, and `--help` loads no model
library (command modules import torch, pygls and the engine inside their functions)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "transformers", "pygls", "lsprotocol", "tree_sitter")


def test_help_lists_every_command_without_importing_model_or_lsp_libraries() -> None:
    probe = (
        "import json, sys\n"
        "from spec_lsp.cli import build_parser\n"
        "parser = build_parser()\n"
        "commands = sorted(parser._subparsers._group_actions[0].choices)\n"
        f"heavy = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
        "print(json.dumps([commands, heavy]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    commands, heavy = json.loads(out)
    assert heavy == []
    for name in ("bench", "complete", "distill", "models", "record", "replay", "serve", "trim"):
        assert name in commands


def test_models_list_aligns_long_names_and_names_a_remote_presets_engine() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "spec_lsp.cli", "models", "list"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.splitlines()
    header, rows = out[0], {line.split()[0]: line for line in out[1:] if line.strip()}
    column = header.index("offline")
    assert all(line[column - 1] == " " and line[column] != " " for line in rows.values()), out
    assert "llama-server" in rows["remote-llama-server"].split()
    assert "openai-compatible" in rows["remote-vllm-qwen2.5-coder-7b"].split()
    # A GGUF pair runs the file's own blocks: no float32/bfloat16 from its [dtype] (issue 42).
    assert "gguf/gguf" in rows["coder"].split() and "int4+int8/bfloat16" in rows["bundled"]
