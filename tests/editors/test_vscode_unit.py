"""VS Code extension unit tests: editors/vscode/test/unit.ts (node:test) on the extension's pure
modules, such as the status bar's words for a failing remote engine. Bundled here with the
extension's own esbuild into a temporary file and run by the Node that editors/vscode/setup.sh
installed; no VS Code, a second or two."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VSCODE = ROOT / "editors" / "vscode"
SETUP = VSCODE / ".setup.json"
ESBUILD = VSCODE / "node_modules" / ".bin" / "esbuild"

pytestmark = pytest.mark.editors


def test_vscode_extension_unit_tests_pass(tmp_path: Path) -> None:
    if os.environ.get("SPEC_LSP_SKIP_VSCODE") == "1" or not SETUP.exists():
        pytest.skip("VS Code tools are not installed: run `make setup` (editors/vscode/setup.sh)")
    node = json.loads(SETUP.read_text())["node"]
    bundle = tmp_path / "unit.js"
    env = dict(os.environ, PATH=f"{Path(node).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    build = [str(ESBUILD), "test/unit.ts", "--bundle", "--platform=node", "--format=cjs"]
    build += ["--packages=external", f"--outfile={bundle}", "--log-level=warning"]
    built = subprocess.run(build, cwd=VSCODE, env=env, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    ran = subprocess.run(
        [node, "--test", str(bundle)], cwd=VSCODE, capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert re.search(r"\bpass [1-9]", ran.stdout), ran.stdout  # the tests ran, not none
