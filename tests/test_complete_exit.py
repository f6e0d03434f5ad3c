"""`spec-lsp complete` ends cleanly: its worker's thread is joined before the interpreter exits.

Left running, the thread was inside torch while the interpreter finalized and the process died
with "terminate called without an active exception" (exit 134) after printing its answer.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_complete_with_the_bundled_model_exits_zero() -> None:
    env = dict(os.environ, SPEC_LSP_KV_DISK="off")
    cmd = [sys.executable, "-m", "spec_lsp.cli", "complete", "examples/sample.py:26:13"]
    done = subprocess.run(
        [*cmd, "--preset", "bundled"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "terminate called" not in done.stderr
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--- suggestion at" in done.stdout
