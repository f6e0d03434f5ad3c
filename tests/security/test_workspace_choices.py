"""The workspace chooses nothing executable (issue 27 item 2): a folder named like a hub id in the
working directory (an editor's is the workspace) is never loaded, a path in a preset says it is
one and resolves against the preset's file, the serving process leaves the workspace and its
import path, and a client may switch only to local presets unless the user allowed more."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from spec_lsp import trust
from spec_lsp.config import Options
from spec_lsp.engine.from_source import (
    ModelLoadError,
    gguf_file,
    is_available_offline,
    load_model,
    load_tokenizer,
    tiny_model,
)
from spec_lsp.engine.head import MODEL_TYPE as HEAD_TYPE
from spec_lsp.engine.loading import draft_kind
from spec_lsp.presets import Preset
from spec_lsp.trust import client_options
from tests.fuzz.lsp_process import ServerProcess

HUB_ID = "Qwen/Qwen2.5-Coder-1.5B"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository that ships a loadable model in a folder named like the hub id, as cwd."""
    folder = tmp_path / "ws" / HUB_ID
    tiny_model(1, seed=7, vocab_size=64).save_pretrained(folder)
    monkeypatch.chdir(tmp_path / "ws")
    return tmp_path / "ws"


def test_a_workspace_folder_named_like_a_hub_id_is_not_loaded(workspace: Path) -> None:
    with pytest.raises(ModelLoadError, match="not loaded"):
        load_model(HUB_ID, "cpu", torch.float32)
    with pytest.raises(ModelLoadError, match="not loaded"):
        load_tokenizer(HUB_ID)
    assert not is_available_offline(HUB_ID)  # the hub's cache does not have it
    # The same folder, named as a path, is a model: only the spelling kept it out.
    assert load_model(f"./{HUB_ID}", "cpu", torch.float32).config.vocab_size == 64


def test_a_hub_id_draft_is_never_read_as_a_local_head(workspace: Path) -> None:
    config = workspace / HUB_ID / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "model_type": HEAD_TYPE}))
    assert draft_kind(HUB_ID) == "model"
    assert draft_kind(str(workspace / HUB_ID)) == "head"


def test_a_preset_path_resolves_against_its_file_never_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    presets, cwd = tmp_path / "presets", tmp_path / "cwd"
    (cwd / "head").mkdir(parents=True)
    presets.mkdir()
    monkeypatch.chdir(cwd)
    preset = Preset(name="p", target="bundled:smollm2-135m-instruct", path=presets / "p.toml")
    assert preset.resolve("./head") == str(presets / "head")
    assert preset.resolve("../cwd/head") == str(cwd / "head")  # relative to the file, explicitly
    assert preset.resolve("gguf:./m.gguf") == f"gguf:{presets / 'm.gguf'}"
    assert preset.resolve("~/m") == str(Path.home() / "m")
    for passes in ("head", HUB_ID, "bundled:smollm2-135m-instruct", "gguf:some-catalog-name"):
        assert preset.resolve(passes) == passes  # bare: a hub id or a name, never ./head


def test_a_gguf_path_that_does_not_say_it_is_one_is_refused(workspace: Path) -> None:
    (workspace / "model.gguf").write_bytes(b"GGUF" + bytes(60))
    for source in ("model.gguf", "gguf:sub/model.gguf"):
        with pytest.raises(ModelLoadError, match="relative"):
            gguf_file(source)


def test_the_server_leaves_the_workspace_and_its_import_path(tmp_path: Path) -> None:
    """`python -m` puts the working directory first on the import path: a workspace's torch.py
    would run when the model loads, unless the server leaves it before."""
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = tmp_path / "workspace-code-ran"
    (ws / "torch.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise ImportError\n")
    script = (
        f"import os, sys; os.chdir({str(ws)!r}); sys.path.insert(0, {str(ws)!r}); "
        f"sys.path.insert(1, {str(ROOT)!r}); sys.argv = ['spec-lsp', 'serve', '--preset', 'tiny']; "
        "from spec_lsp.cli import main; main()"
    )
    server = ServerProcess([sys.executable, "-c", script])
    try:
        server.initialize({"partialMs": 0})
        assert server.wait_loaded()["state"] == "ready"  # the real torch loaded the tiny pair
        pid_cwd = Path(f"/proc/{server.pid}/cwd")
        if pid_cwd.exists():
            assert pid_cwd.resolve() == Path("/")
    finally:
        server.close()
    assert not marker.exists()


def test_leaving_the_workspace_keeps_a_relative_preset_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", str(tmp_path), *sys.path])
    options = trust.leave_workspace(Options(preset="presets/mine.toml"))
    assert options.preset == str(tmp_path / "presets" / "mine.toml")
    assert Path.cwd() == Path("/") and str(tmp_path) not in sys.path and "" not in sys.path
    assert trust.leave_workspace(Options(preset="bundled")).preset == "bundled"


@pytest.fixture
def allowed() -> object:
    yield
    trust.allow_client_presets("")


def test_a_client_cannot_switch_to_a_remote_preset_the_user_did_not_allow(allowed: object) -> None:
    current = Options(preset="bundled")
    options, warnings = client_options(current, {"preset": "remote-llama-server"})
    assert options.preset == "bundled"
    assert any("allow-client-presets remote" in w for w in warnings)
    trust.allow_client_presets("remote")
    options, warnings = client_options(current, {"preset": "remote-llama-server"})
    assert options.preset == "remote-llama-server" and not warnings


def test_a_client_cannot_start_a_download_the_user_did_not_allow(allowed: object) -> None:
    current = Options(preset="bundled")
    options, warnings = client_options(current, {"preset": "qwen2.5-coder-7b"})  # hub ids
    assert options.preset == "bundled" and any("downloaded" in w for w in warnings)
    assert client_options(current, {"preset": "tiny"})[0].preset == "tiny"  # local: allowed
    trust.allow_client_presets("remote,download")
    assert client_options(current, {"preset": "qwen2.5-coder-7b"})[0].preset == "qwen2.5-coder-7b"


def _hub_cache(root: Path, repo: str, files: dict[str, str]) -> None:
    """`files` of `repo` in a hub cache at `root`, laid out as huggingface_hub leaves them."""
    folder = root / f"models--{repo.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / "main").write_text("c0ffee")
    for name, text in files.items():
        (folder / "snapshots" / "c0ffee").mkdir(parents=True, exist_ok=True)
        (folder / "snapshots" / "c0ffee" / name).write_text(text)


def test_a_download_cut_short_still_needs_the_users_permission(
    allowed: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupted download leaves the config in the hub's cache and not all the weights:
    switching to that preset would fetch the rest, so it is still a download."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    current, wanted = Options(preset="bundled"), {"preset": "starcoder2-15b"}
    target, draft = "bigcode/starcoder2-15b", "bigcode/starcoder2-3b"
    index = {"weight_map": {"a": "model-1-of-2.safetensors", "b": "model-2-of-2.safetensors"}}
    _hub_cache(tmp_path / "hub", target, {"config.json": "{}"})
    _hub_cache(tmp_path / "hub", draft, {"config.json": "{}", "model.safetensors": ""})
    options, warnings = client_options(current, wanted)
    assert options.preset == "bundled" and any("downloaded" in w for w in warnings)
    shards = {"model.safetensors.index.json": json.dumps(index), "model-1-of-2.safetensors": ""}
    _hub_cache(tmp_path / "hub", target, shards)  # one shard of two
    assert client_options(current, wanted)[0].preset == "bundled"
    _hub_cache(tmp_path / "hub", target, {"model-2-of-2.safetensors": ""})
    assert client_options(current, wanted)[0].preset == "starcoder2-15b"  # all there: local


def test_the_preset_the_user_started_with_is_kept_whatever_its_kind(allowed: object) -> None:
    trust.allow_client_presets("", user_preset="remote-llama-server")  # `serve --preset`
    current = Options(preset="remote-llama-server")
    options, warnings = client_options(current, {"preset": "remote-llama-server", "maxTokens": 8})
    assert (options.preset, options.max_tokens, warnings) == ("remote-llama-server", 8, [])
    options, _ = client_options(options, {"preset": "tiny"})  # away to a local one, and back
    assert (
        client_options(options, {"preset": "remote-llama-server"})[0].preset
        == "remote-llama-server"
    )
    with pytest.raises(ValueError, match="unknown"):
        trust.allow_client_presets("everything")


def test_serve_trust_remote_code_reaches_the_server_and_only_from_its_flag(
    monkeypatch: pytest.MonkeyPatch, allowed: object
) -> None:
    """The one way to turn it on (a client's `trustRemoteCode` is ignored: tests/test_config.py)."""
    import logging

    from spec_lsp import server as server_module
    from spec_lsp.cli import build_parser
    from spec_lsp.commands import serve as serve_command

    built: list[dict[str, object]] = []

    class Served(Exception):
        pass

    class FakeServer:
        def start_io(self) -> None:
            raise Served  # instead of serving stdio and ending the process

    def build(**kwargs: object) -> FakeServer:
        built.append(kwargs)
        return FakeServer()

    monkeypatch.setattr(server_module, "build_server", build)
    handlers = logging.getLogger().handlers[:]
    try:
        for flags, trusted in (([], False), (["--trust-remote-code"], True)):
            args = build_parser().parse_args(["serve", "--preset", "tiny", *flags])
            with pytest.raises(Served):
                serve_command.serve(args)
            assert built[-1]["trust_remote_code"] is trusted
    finally:
        logging.getLogger().handlers[:] = handlers
