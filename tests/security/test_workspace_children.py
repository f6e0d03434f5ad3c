"""No command runs a workspace's code through the Python children it starts (issue 41 items 1,
10): each child is `python -P` with the empty and relative `PYTHONPATH` entries dropped
(`spec_lsp.interpreter`), a GGUF's wheels come without any child (httpx, `engine.registry`), and
every command drops those entries from its own path as it starts. The workspace here ships
`pip.py`, `spec_lsp/`, `sitecustomize.py` and `torch.py`, each leaving a marker when imported; each
command is started in it, and no marker may appear. (`serve` itself:
test_workspace_choices.py::test_the_server_leaves_the_workspace...)"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spec_lsp import interpreter
from spec_lsp.benchmarks import load as bench_load
from spec_lsp.benchmarks import server as bench_server
from spec_lsp.engine.weights.native.library import LibraryError, smoke_test
from spec_lsp.replay.format import write_session
from tests.replay.builders import typing_session

SPEC_LSP = Path(sys.executable).parent / "spec-lsp"
HOSTILE = ("pip.py", "sitecustomize.py", "usercustomize.py", "torch.py", "spec_lsp/__init__.py")
GGUF = "gguf:qwen2.5-coder-0.5b-instruct-q4_k_m"  # a catalog file the cache below lacks
NO_INDEX = "file:///nonexistent-spec-lsp-index/"  # a registry that answers at once with nothing
OFFLINE = {"SPEC_LSP_INDEX_URL": NO_INDEX, "HF_HUB_OFFLINE": "1"}


class Workspace:
    def __init__(self, root: Path, names: tuple[str, ...] = HOSTILE) -> None:
        self.path, self.markers = root / "ws", root / "markers"
        self.markers.mkdir()
        for name in names:
            marker = self.markers / name.replace("/", "-")
            (self.path / name).parent.mkdir(parents=True, exist_ok=True)
            (self.path / name).write_text(f"open({str(marker)!r}, 'w').close()\n")

    def ran(self) -> list[str]:
        return sorted(p.name for p in self.markers.iterdir())


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


def run_in(ws: Workspace, *args: str, env: dict[str, str] | None = None) -> str:
    """`spec-lsp ARGS` started in the workspace, as an editor or a shell in it would; its output."""
    done = subprocess.run(
        [str(SPEC_LSP), *args],
        cwd=ws.path,
        env={**os.environ, **OFFLINE, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.stdout + done.stderr


@pytest.mark.parametrize(
    "args",
    [["models", "fetch", GGUF], ["complete", "a.py:2:5", "--preset", "coder"]],
    ids=["models-fetch", "complete-coder"],
)
def test_fetching_a_gguf_runs_nothing_from_the_workspace(
    workspace: Workspace, tmp_path: Path, args: list[str]
) -> None:
    (workspace.path / "a.py").write_text("def f():\n    return 1\n")
    out = run_in(workspace, *args, env={"SPEC_LSP_CACHE": str(tmp_path / "cache")})
    assert f"the index has no project page {NO_INDEX}" in out, out  # the registry was asked
    assert workspace.ran() == [], out


def test_replay_starts_the_real_server_not_the_workspaces_spec_lsp(
    workspace: Workspace, tmp_path: Path
) -> None:
    session = tmp_path / "typing.jsonl"
    write_session(session, typing_session("def add(a, b):\n    ", "ret", gap_ms=50, end_ms=400))
    out = run_in(workspace, "replay", str(session), "--preset", "tiny", "--load-timeout", "240")
    assert workspace.ran() == [], out
    assert "requests" in out, out  # the figures of a replay against the real server


@pytest.mark.parametrize("bench", [bench_server, bench_load], ids=["bench-server", "bench-load"])
def test_bench_servers_start_without_the_workspace_on_their_path(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, bench: object
) -> None:
    monkeypatch.chdir(workspace.path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep + str(workspace.path.parent))  # an empty entry

    async def start_and_stop() -> None:
        args = ("tiny", "cpu", 8) if bench is bench_load else ("tiny", "cpu")
        started = await bench.start(*args)  # type: ignore[attr-defined]
        client = started[0] if isinstance(started, tuple) else started
        await client.stop(timeout=30.0)

    asyncio.run(start_and_stop())
    assert workspace.ran() == []


def test_the_kernel_smoke_test_skips_an_empty_pythonpath_entry(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library functions themselves, called with the workspace as working directory and an
    empty `PYTHONPATH` entry (it names the working directory), as a server's model load would."""
    monkeypatch.chdir(workspace.path)
    monkeypatch.setenv("PYTHONPATH", f"{os.pathsep}.")
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "lib.so").write_bytes(b"not a library")
    with pytest.raises(LibraryError, match="smoke test"):
        smoke_test(tmp_path / "lib.so")
    assert workspace.ran() == []


def test_a_command_drops_the_working_directory_an_empty_pythonpath_entry_put_on_its_path(
    tmp_path: Path,
) -> None:
    """`PYTHONPATH=:/x spec-lsp ...` in a workspace: what spec-lsp imports after it starts
    (torch here) is not the workspace's. What the interpreter imported before (a
    `sitecustomize.py`) is beyond it: the editors start the server in the home folder."""
    ws = Workspace(tmp_path, names=("torch.py",))
    out = run_in(ws, "doctor", env={"PYTHONPATH": f"{os.pathsep}{tmp_path / 'x'}"})
    assert "torch" in out, out
    assert ws.ran() == [], out


def test_only_the_entries_naming_the_working_directory_are_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here, other = tmp_path / "here", tmp_path / "other"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["", str(other), ".", "rel"]))
    monkeypatch.setattr(sys, "path", [str(here), str(other), str(here / "rel"), *sys.path])
    interpreter.drop_relative_pythonpath()
    assert os.environ["PYTHONPATH"] == str(other)
    assert str(here) not in sys.path and str(here / "rel") not in sys.path
    assert str(other) in sys.path
    assert "PYTHONPATH" not in interpreter.child_env({"PYTHONPATH": f"{os.pathsep}."})
    assert interpreter.child_command("-m", "pip")[1:] == ["-P", "-m", "pip"]
