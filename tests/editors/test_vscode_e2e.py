"""VS Code end to end: the packaged extension in a real VS Code (code-server), typing against the
real `spec-lsp serve`, driven by Debian's chromium through playwright-core.

The work is done by editors/vscode/out/test/e2e.js; editors/vscode/setup.sh (run by `make setup`)
installs its tools and writes editors/vscode/.setup.json. Without that file the tests skip and say
how to install; once set-up has claimed success, a missing tool is a failure, not a skip.

Artefacts (screenshots, code-server's and the server's logs, the runner's output) go to
.out/vscode-e2e/<test>/. SPEC_LSP_UPDATE_DOCS=1 also copies the bundled model's ghost-text
screenshot to docs/vscode-ghost-text.png.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
VSCODE = ROOT / "editors" / "vscode"
SETUP = VSCODE / ".setup.json"
ARTEFACTS = ROOT / ".out" / "vscode-e2e"
DOCS_SCREENSHOT = ROOT / "docs" / "vscode-ghost-text.png"
RUN_TIMEOUT_S = 540  # the runner bounds itself at 480 s; this is the backstop

pytestmark = pytest.mark.editors


def _tools() -> dict[str, str]:
    if os.environ.get("SPEC_LSP_SKIP_VSCODE") == "1" or not SETUP.exists():
        pytest.skip(
            "VS Code e2e tools are not installed: run `make setup` "
            "(or bash editors/vscode/setup.sh); SPEC_LSP_SKIP_VSCODE=1 skips them on purpose"
        )
    tools: dict[str, str] = json.loads(SETUP.read_text())
    missing = [f"{name}: {path}" for name, path in tools.items() if not Path(path).exists()]
    assert not missing, (
        f"editors/vscode/setup.sh reported success, yet these are missing: {missing}"
    )
    return tools


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _stop(proc: subprocess.Popen[str], out: Path) -> str:
    """Ends a runner that overran: SIGTERM lets it save evidence and stop code-server, then KILL."""
    _kill_group(proc.pid, signal.SIGTERM)
    try:
        output, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate(timeout=10)
    pgid_file = out / "code-server.pgid"
    if pgid_file.exists():  # code-server runs in its own group; never leave it behind
        _kill_group(int(pgid_file.read_text()), signal.SIGKILL)
    return output or ""


def _run_e2e(preset: str, name: str, extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    tools = _tools()
    out = ARTEFACTS / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    server = Path(sys.executable).with_name("spec-lsp")
    assert server.exists(), f"no spec-lsp next to {sys.executable}: is the package installed?"
    env = {
        **os.environ,
        "SPEC_LSP_CODE_SERVER": tools["code_server"],
        "SPEC_LSP_CHROMIUM": tools["chromium"],
        "SPEC_LSP_VSIX": tools["vsix"],
        "SPEC_LSP_SERVER": str(server),
        "SPEC_LSP_E2E_OUT": str(out),
        "SPEC_LSP_E2E_PRESET": preset,
        "SPEC_LSP_E2E_TIMEOUT_S": "480",
        **(extra_env or {}),
    }
    proc = subprocess.Popen(
        [tools["node"], tools["e2e"]],
        cwd=VSCODE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        output = _stop(proc, out)
        (out / "e2e.log").write_text(output)
        pytest.fail(f"VS Code e2e ran over {RUN_TIMEOUT_S} s; evidence in {out}\n{output[-3000:]}")
    (out / "e2e.log").write_text(output)
    assert proc.returncode == 0, (
        f"VS Code e2e failed (screenshot, code-server and server logs in {out}):\n{output[-4000:]}"
    )
    result: dict[str, Any] = json.loads(
        next(line for line in reversed(output.splitlines()) if line.startswith("{"))
    )
    return result


def _check(result: dict[str, Any]) -> None:
    assert result["ok"] is True
    assert result["ghost"].strip(), "the runner saw ghost text, so it must not be blank"
    assert "accepted" in result["statusBar"]
    assert any(
        line.split()[:1] == ["accepted"] and line.split()[-1] != "0"
        for line in result["statsLines"]
    )
    # Alt+] (showNext) asked for alternatives and showed another; Alt+[ the first again; Alt+] the
    # second again, which Tab inserted (the runner checked the saved file).
    cycle = result["cycle"]
    assert cycle["next"] != cycle["first"] and cycle["next"].strip(), cycle
    assert cycle["previous"] == cycle["first"] and cycle["nextAgain"] == cycle["next"], cycle
    # Shift+Tab took the ghost text's first line (the runner checked the saved file).
    assert result["nextLine"]["line"].endswith(result["nextLine"]["ghost"]), result["nextLine"]
    # The status bar menu switched python off ("!python") and on again in the user settings.
    assert result["languageSwitch"] == [["*", "!python"], ["*"]], result["languageSwitch"]
    # The menu's preset list comes from `spec-lsp models list`.
    assert {"coder", "bundled"} <= set(result["presets"]), result["presets"]
    # With specLsp.autoTrigger off, typing asked nothing and spec-lsp: Suggest here asked once.
    assert result["manual"]["asked"] == 1 and result["manual"]["ghost"].strip(), result["manual"]
    # The workspace's own serverPath, serverArgs and recordDirectory were ignored (machine scope):
    # its script never ran and nothing was written into it; sessions went to global storage.
    assert result["workspaceLeftovers"] == [], result["workspaceLeftovers"]
    # specLsp.server.address alone: the extension read the token `spec-lsp serve --tcp` wrote and
    # got ghost text from that server, whose log never holds the token.
    shared = result["shared"]
    assert shared["ghost"].strip() and shared["tokenInLog"] is False, shared
    # With no server configured or on PATH, the workspace's own .venv/bin/spec-lsp ran only after
    # the user answered "Run it" to the extension's question.
    consent = result["venvConsent"]
    assert "has its own spec-lsp" in consent["question"], consent
    assert consent["ranBeforeAnswer"] is False, consent


def test_vscode_shows_spec_lsp_ghost_text_and_tab_accepts_it_tiny_model() -> None:
    _check(_run_e2e("tiny", "tiny"))


@pytest.mark.bundled
def test_vscode_shows_spec_lsp_ghost_text_and_tab_accepts_it_bundled_model() -> None:
    result = _run_e2e("bundled", "bundled")
    _check(result)
    if os.environ.get("SPEC_LSP_UPDATE_DOCS") == "1":
        shutil.copyfile(ARTEFACTS / "bundled" / "vscode-ghost-text.png", DOCS_SCREENSHOT)


def test_vscode_next_edit_is_shown_and_tab_accepts_it_fake_rewriter(tmp_path: Path) -> None:
    """Next edits: `spec-lsp serve --preset` on the deterministic fake rewriter
    (tests/nextedit/fake_rewriter.py). The runner renames `width` to `w` on line 1 of geometry.py
    by typing; the server's next edit (the `width` on line 2) shows struck through; Tab jumps to
    it, Tab applies it; the following one (asked for after the accept) is dismissed with Escape."""
    _tools()  # skips before starting anything when the tools are absent
    from tests.nextedit.fake_rewriter import FakeRewriter

    fake = FakeRewriter()
    try:
        preset = fake.write_preset(tmp_path)
        result = _run_e2e(
            "nextedit",
            "nextedit",
            {"SPEC_LSP_E2E_SCENARIO": "nextedit", "SPEC_LSP_E2E_PRESET_FILE": str(preset)},
        )
    finally:
        fake.stop()
    assert result["ok"] is True
    shown = result["nextEdit"]
    # The edit was drawn as the old text struck through: the `width` the rename left behind.
    assert "width" in "".join(shown["struck"]), shown
    # ... and its new text drawn after it (the line's text in the buffer is still the old one).
    assert "w" in shown["added"] and shown["shownLines"][1] == "    return width * height", shown
    # The fake's ghost text ("pass") for the typing, if it came first, had no next edit beside it.
    assert shown["struckWithGhost"] is False, shown
    # The first Tab moved the cursor to the edit (line 2); the second applied it, and the file
    # holds both the typed rename and the accepted one, the rest as it was.
    assert shown["afterJump"].startswith("Ln 2,"), shown
    lines = shown["lines"]
    assert lines[:2] == ["def area(w, height):", "    return w * height"], lines
    assert lines[4:6] == ["def perimeter(width, height):", "    return 2 * (width + height)"], lines
    # After the accept the extension asked again: another edit was shown, with the hint on the
    # cursor's line that Tab goes there, and Escape took it away leaving the file as it was.
    second = shown["second"]
    assert "width" in "".join(second["struck"]) and "next edit at line" in second["hint"], second
    assert shown["linesAfterDismiss"] == lines, shown
