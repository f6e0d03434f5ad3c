"""The built wheel is the product: installed into a fresh environment and run from another folder
(no checkout on sys.path), it has its version, `python -m spec_lsp`, the presets as package data
and an LSP server that completes with the `tiny` preset and with the default one (`coder`, the
real pair `make setup` fetched into the cache).

The fresh environment sees this one's site-packages through a .pth line for the dependencies
(torch, transformers...), so nothing is downloaded; the wheel itself is installed with
`pip --python` and no dependencies, and `spec_lsp` must come from it, not from the checkout."""

from __future__ import annotations

import asyncio
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from spec_lsp.replay.client import LspClient

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("pyproject.toml", "README.md", "LICENSE", "spec_lsp", "models")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment with the wheel built from a copy of the tree (the build writes
    build/ and *.egg-info beside its sources); returns its bin folder."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    for name in SHIPPED:
        if (ROOT / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "bundled-draft")
            shutil.copytree(ROOT / name, src / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    wheels = base / "dist"
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(src)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    (wheel,) = wheels.glob("spec_lsp-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run(
        [*pip, "--python", str(python), "install", "--no-deps", str(wheel)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    return venv / "bin"


def _run(bin_dir: Path, *args: str, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [str(bin_dir / args[0]), *args[1:]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def test_the_installed_wheel_runs_from_another_folder_with_its_presets(
    installed: Path, tmp_path: Path
) -> None:
    version = _run(installed, "spec-lsp", "--version", cwd=tmp_path)
    assert version.split() == ["spec-lsp", "0.1.0"]
    assert "usage: spec-lsp" in _run(installed, "python", "-m", "spec_lsp", "--help", cwd=tmp_path)
    where = _run(
        installed, "python", "-c", "import spec_lsp; print(spec_lsp.__file__)", cwd=tmp_path
    )
    assert Path(where.strip()).is_relative_to(installed.parent)  # the wheel's, not the checkout's
    listing = _run(installed, "spec-lsp", "models", "list", cwd=tmp_path)
    rows = {line.split()[0]: line.split() for line in listing.splitlines()[1:]}
    assert {"bundled", "coder", "tiny"} <= set(rows)
    assert rows["coder"][2] == "package" and rows["tiny"][1:3] == ["yes", "builtin"]
    assert rows["bundled"][1:3] == ["yes", "package"]  # its distilled head shipped in the wheel


def test_the_wheel_ships_the_top_level_models_folder_inside_the_package(
    installed: Path, tmp_path: Path
) -> None:
    """The repository keeps its presets at the root (`models/`); the wheel has every file of it
    as package data under `spec_lsp/models/`, and the installed presets are found there."""
    found = _run(
        installed, "python", "-c", "import spec_lsp.presets as p; print(p.MODELS_DIR)", cwd=tmp_path
    )
    shipped = Path(found.strip())
    assert shipped.is_relative_to(installed.parent) and shipped.parts[-2:] == ("spec_lsp", "models")
    ours = ROOT / "models"
    expected = {
        p.relative_to(ours)
        for p in ours.rglob("*")
        if p.is_file() and "bundled-draft" not in p.parts and "__pycache__" not in p.parts
    }
    assert {p.relative_to(shipped) for p in shipped.rglob("*") if p.is_file()} == expected


@pytest.mark.parametrize(
    "preset", ["tiny", pytest.param(None, marks=pytest.mark.coder, id="default")]
)
async def test_the_installed_server_answers_an_inline_completion(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, preset: str | None
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    chosen = ["--preset", preset] if preset else []  # None: the default, as a new user runs it
    client = LspClient([str(installed / "spec-lsp"), "serve", *chosen])
    await client.start()
    try:
        init: dict[str, object] = {"processId": None, "rootUri": None, "capabilities": {}}
        options = {"preset": preset} if preset else {}
        await client.request("initialize", {**init, "initializationOptions": options})
        client.notify("initialized", {})
        for _ in range(3000):
            status = await client.request("spec-lsp/status")
            if status["state"] != "loading":
                break
            await asyncio.sleep(0.1)
        assert (status["state"], status["preset"]) == ("ready", preset or "coder"), status
        uri, text = (tmp_path / "add.py").as_uri(), "def add(a, b):\n    return "
        client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
        )
        params = {
            "textDocument": {"uri": uri},
            "position": {"line": 1, "character": 11},
            "context": {"triggerKind": 1},
        }
        result = await client.request("textDocument/inlineCompletion", params, timeout=60)
        items = result["items"] if isinstance(result, dict) else result
        assert items and isinstance(items[0]["insertText"], str) and items[0]["insertText"]
    finally:
        await client.stop()
