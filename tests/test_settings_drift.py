"""Every list of the server's options agrees with spec_lsp/config.py's SETTINGS: VS Code's manifest,
the extension's SERVER_KEYS, its README, docs/protocol.md and the Neovim help (tools/gen_settings.py
writes them; run it after changing an option), and README.md's table when it has one."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from spec_lsp.config import SETTINGS

ROOT = Path(__file__).resolve().parents[1]


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_settings", ROOT / "tools" / "gen_settings.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_settings"] = module
    spec.loader.exec_module(module)
    return module


gen = load_tool()


def test_every_generated_option_list_matches_config_py() -> None:
    assert gen.drifted() == [], "run: .venv/bin/python tools/gen_settings.py"


def test_the_check_finds_an_option_missing_from_a_list() -> None:
    text = gen.PROTOCOL_MD.read_text(encoding="utf-8")
    dropped = re.sub(r"^\| `partialMs` \|.*\n", "", text, flags=re.M)
    assert dropped != text and gen.render_protocol(dropped) == text
    help_text = gen.NVIM_HELP.read_text(encoding="utf-8")
    assert gen.render_nvim_help(help_text.replace("`prefetch`", "`prefetsh`")) == help_text


def test_a_file_without_its_markers_is_reported() -> None:
    with pytest.raises(gen.Drift):
        gen.render_vscode_readme("# no table here\n")


def test_vscode_settings_are_the_servers_or_the_extensions_own() -> None:
    """A manifest setting is a server option (sent) or in config.ts's CLIENT_ONLY (not sent)."""
    manifest = json.loads(gen.PACKAGE_JSON.read_text(encoding="utf-8"))
    props = manifest["contributes"]["configuration"]["properties"]
    config_ts = gen.CONFIG_TS.read_text(encoding="utf-8")
    own = re.search(r"CLIENT_ONLY = new Set\(\[([^\]]*)\]\)", config_ts, re.S)
    assert own, "config.ts has no CLIENT_ONLY set"
    client_only = set(re.findall(r'"([\w.]+)"', own.group(1)))
    server = {s.key for s in SETTINGS if s.client}
    names = {k.removeprefix("specLsp.") for k in props}
    assert names == server | client_only, names ^ (server | client_only)
    assert not server & client_only


def test_server_command_settings_cannot_come_from_a_workspace() -> None:
    """A workspace's .vscode/settings.json must not choose what runs (issue 27)."""
    props = json.loads(gen.PACKAGE_JSON.read_text(encoding="utf-8"))["contributes"]
    props = props["configuration"]["properties"]
    machine = [k for k, v in props.items() if v.get("scope") == "machine"]
    for key in ("serverPath", "serverArgs", "server.address", "server.tokenFile", "sharedServer"):
        assert f"specLsp.{key}" in machine, key


def test_readme_configuration_table_matches_config_py() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    problems = gen.readme_table_drift(readme)
    if problems is None:
        pytest.skip("README.md has no configuration table (it links docs/protocol.md)")
    assert problems == []


def test_the_readme_check_finds_a_wrong_default_and_a_missing_row() -> None:
    rows = [f"| `{s.key}` | `{s.default_text()}` | x |" for s in SETTINGS if s.client]
    assert gen.readme_table_drift("\n".join(rows)) == []
    rows[0] = rows[0].replace("coder", "bundled")
    problems = gen.readme_table_drift("\n".join(rows[:-1]))
    assert len(problems) == 2, problems
    assert gen.readme_table_drift("no table") is None
