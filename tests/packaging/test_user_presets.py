"""User presets: looked up in the user's folder (`SPEC_LSP_MODELS`) before the package's, a local
GGUF file as a source, and `models list` says where each preset comes from and whether it is
available offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spec_lsp.cli import main
from spec_lsp.presets import (
    MODELS_DIR,
    PresetError,
    list_presets,
    load_preset,
    shipped_models,
    user_dir,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def user_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "my-presets"
    folder.mkdir()
    monkeypatch.setenv("SPEC_LSP_MODELS", str(folder))
    return folder


def _gguf(path: Path) -> Path:
    path.write_bytes(b"GGUF" + b"\0" * 60)  # the magic is all `models list` checks
    return path


def test_the_shipped_presets_are_the_packages_models_else_the_checkouts_beside_it(
    tmp_path: Path,
) -> None:
    package = tmp_path / "spec_lsp"
    package.mkdir()
    assert shipped_models(package) == tmp_path / "models"  # a checkout: the top-level folder
    (package / "models").mkdir()
    assert shipped_models(package) == package / "models"  # an installed wheel: package data
    assert MODELS_DIR == ROOT / "models" and (MODELS_DIR / "coder.toml").is_file()


def test_user_folder_follows_xdg_config_home_unless_spec_lsp_models_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SPEC_LSP_MODELS", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert user_dir() == tmp_path / "cfg" / "spec-lsp" / "models"
    monkeypatch.setenv("SPEC_LSP_MODELS", str(tmp_path / "elsewhere"))
    assert user_dir() == tmp_path / "elsewhere"


def test_a_user_preset_naming_a_local_gguf_is_found_by_name_and_listed_as_user_and_offline(
    user_models: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _gguf(tmp_path / "my-model.gguf")
    (user_models / "mine.toml").write_text(
        f'target = "{model}"\nfim = "qwen"\ntarget_config = "configs/qwen2.5-coder-1.5b.json"\n'
    )
    preset = load_preset("mine")
    assert (preset.origin, preset.target) == ("user", str(model))
    # an architecture file the user preset does not ship comes from the package's configs/
    assert preset.load_spec().target_config == MODELS_DIR / "configs/qwen2.5-coder-1.5b.json"
    assert main(["models", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert (rows["mine"]["from"], rows["mine"]["offline"]) == ("user", True)
    assert rows["coder"]["from"] == "package" and rows["tiny"]["from"] == "builtin"
    model.unlink()
    assert main(["models", "list", "--json"]) == 0
    assert {r["name"]: r for r in json.loads(capsys.readouterr().out)}["mine"]["offline"] is False


def test_a_user_file_named_like_a_shipped_preset_replaces_it(user_models: Path) -> None:
    (user_models / "bundled.toml").write_text('target = "builtin:tiny-target"\n')
    preset = load_preset("bundled")
    assert (preset.origin, preset.target) == ("user", "builtin:tiny-target")
    assert [p.name for p in list_presets()].count("bundled") == 1


def test_a_preset_that_sets_max_new_tokens_is_refused_with_the_setting_to_use(
    user_models: Path,
) -> None:
    (user_models / "old.toml").write_text('target = "builtin:tiny-target"\nmax_new_tokens = 48\n')
    with pytest.raises(PresetError, match="maxTokens"):
        load_preset("old")


def test_a_broken_user_preset_fails_models_list_but_the_others_are_still_listed(
    user_models: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (user_models / "broken.toml").write_text("target = \n")
    assert main(["models", "list", "--json"]) == 1
    out = capsys.readouterr()
    assert "broken" in out.err and "coder" in {r["name"] for r in json.loads(out.out)}


def test_an_unknown_preset_names_the_user_folder(user_models: Path) -> None:
    with pytest.raises(PresetError, match=str(user_models)):
        load_preset("no-such-preset")
