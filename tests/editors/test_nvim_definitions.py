"""Neovim with a second language server (tests/editors/fake_definition_server.py, a process that
answers definition and hover for `rect_area`) and `editor_definitions = true`: the plugin asks
it about the identifiers of the cursor's line and the line above at a pause and sends the answer
with `spec-lsp/definitions`; nothing without another server, nothing with the option off; and
against the real server, the definition reaches the model's prompt (tests/server/prompt_server.py
writes each prompt)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.editors.test_nvim import HELPERS, NVIM, NvimRun, needs_nvim, run_nvim

FAKE = Path(__file__).with_name("fake_definition_server.py")
PROMPT_SERVER = Path(__file__).resolve().parents[1] / "server" / "prompt_server.py"
SIGNATURE = "def rect_area(width: float, height: float) -> float"
DOC = "The area of a width x height rectangle."

pytestmark = pytest.mark.editors


def fake_spec(tmp: Path) -> dict[str, Any]:
    """The fake server's arguments; its target file is never written: what reaches spec-lsp
    comes from the editor, not from a file the server could index."""
    target = tmp / "site-packages" / "geometry.py"
    return {
        "python": sys.executable,
        "fake_server": str(FAKE),
        "target": str(target),
        "fake_log": str(tmp / "asked.jsonl"),
    }


def asked(tmp: Path) -> list[dict[str, str]]:
    log = tmp / "asked.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture(scope="module")
def mock_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[NvimRun, Path]:
    if NVIM is None:
        pytest.skip("no Neovim 0.12: run editors/nvim/setup.sh")
    tmp = tmp_path_factory.mktemp("nvim-definitions")
    run = run_nvim(tmp, "definitions_mock", None, timeout_ms=120_000, **fake_spec(tmp))
    return run, tmp


@needs_nvim
def test_definitions_scenario_runs_every_step_without_error(
    mock_run: tuple[NvimRun, Path],
) -> None:
    run, _ = mock_run
    assert run.result.get("done") and not run.result.get("error"), run.explain("not finished")


@needs_nvim
def test_a_pause_sends_what_the_other_server_answered(mock_run: tuple[NvimRun, Path]) -> None:
    run, tmp = mock_run
    sent = run.obs("sent")
    assert len(sent) == 1, run.explain(f"one pause, one notification: {sent}")
    params = sent[0]
    assert params["textDocument"] == {"uri": run.obs("uri"), "version": run.obs("version")}
    [told] = params["definitions"]
    target = (tmp / "site-packages" / "geometry.py").as_uri()
    assert told["name"] == "rect_area" and told["uri"] == target, run.explain(str(told))
    assert told["range"]["start"] == {"line": 3, "character": 4}, run.explain(str(told))
    assert SIGNATURE in told["text"] and DOC in told["text"], run.explain(str(told))


@needs_nvim
def test_the_other_server_is_asked_about_the_names_near_the_cursor_only(
    mock_run: tuple[NvimRun, Path],
) -> None:
    """The typed line and the one above it (sample.py's last), at most 8 names; `mean` and
    `stdev`, further up, never; a hover only for the name whose definition came."""
    run, tmp = mock_run
    names = [a["name"] for a in asked(tmp) if a["method"] == "textDocument/definition"]
    methods = {a["method"] for a in asked(tmp)}
    assert methods == {"textDocument/definition", "textDocument/hover"}, run.explain(str(methods))
    above = (HELPERS / "fixtures" / "sample.py").read_text().rstrip("\n").split("\n")[-1]
    near = set(re.findall(r"[A-Za-z_]\w*", above + " total = rect_area(2, 3"))
    assert "rect_area" in names and set(names) <= near, run.explain(str(names))
    assert len(set(names)) <= 8, run.explain(str(names))
    hovered = {a["name"] for a in asked(tmp) if a["method"] == "textDocument/hover"}
    assert hovered == {"rect_area"}, run.explain(f"hover only where a definition came: {hovered}")


@needs_nvim
def test_nothing_is_sent_without_another_server_or_with_the_option_off(
    mock_run: tuple[NvimRun, Path],
) -> None:
    run, _ = mock_run
    assert run.obs("sent_alone") == 0, run.explain("sent with no other server attached")
    assert run.obs("sent_off") == 0, run.explain("sent with editor_definitions off")


@needs_nvim
def test_a_definition_from_the_other_server_reaches_the_real_servers_prompt(
    tmp_path: Path,
) -> None:
    prompts = tmp_path / "prompts.jsonl"
    setup = {
        "cmd": [sys.executable, str(PROMPT_SERVER)],
        "ui": "virtual_text",
        "editor_definitions": True,
        "init_options": {"maxTokens": 4},
    }
    env = {"SPEC_LSP_TEST_PROMPTS": str(prompts)}
    spec = fake_spec(tmp_path) | {"prompts": str(prompts)}
    run = run_nvim(tmp_path, "definitions", setup, env=env, timeout_ms=240_000, **spec)
    assert run.result.get("done") and not run.result.get("error"), run.explain("not finished")
    seen = [json.loads(line) for line in prompts.read_text().splitlines()]
    shown = [p for p in seen if SIGNATURE in p]
    assert shown, run.explain(f"no prompt holds the definition; the last: {seen[-1:]}")
    assert f"# site-packages/geometry.py\n{SIGNATURE}\n{DOC}" in shown[-1], run.explain(shown[-1])
    assert "```" not in shown[-1]
