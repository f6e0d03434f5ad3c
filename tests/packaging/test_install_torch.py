"""The Makefile's torch step (issue 42 item 1): torch's CPU build from PyTorch's CPU index where
there is no NVIDIA GPU, the ordinary index within seconds where that index does not answer.

Where PyTorch's CPU index answers, the step's own command line runs under `pip install --dry-run
--report` and the report must hold no nvidia-*, cuda-* or triton package. Where it does not (the
machines the tests run on reach only PyPI), that test is skipped and says so; the others check the
command line the step runs, with a stand-in Python that records pip's arguments, against a local
index that answers, one that never does, and an `nvidia-smi` that lists a GPU or fails."""

from __future__ import annotations

import functools
import http.server
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CUDA_ONLY = ("nvidia-", "cuda-", "triton")


def torch_step() -> list[str]:
    """The Makefile's torch step, as `make -n` prints it (nothing runs)."""
    out = subprocess.run(
        ["make", "-n", "-B", ".venv/.setup-stamp"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (line,) = [line for line in out.splitlines() if "install_torch.sh" in line]
    return shlex.split(line)


def run_step(
    tmp_path: Path, env: dict[str, str], *pip_args: str, python: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The step's command line, its Python swapped for `python` where given."""
    cmd = torch_step()
    if python is not None:
        cmd[-1] = python
    return subprocess.run(
        [*cmd, *pip_args],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_makefiles_torch_step_is_the_script_and_shows_pips_progress() -> None:
    cmd = torch_step()
    assert cmd == ["bash", "tools/install_torch.sh", ".venv/bin/python"]
    assert "-q" not in cmd


def _cpu_index_answers() -> bool:
    try:
        urllib.request.urlopen(f"{CPU_INDEX}/torch/", timeout=3)
        return True
    except OSError:
        return False


def test_the_documented_install_resolves_no_nvidia_package(tmp_path: Path) -> None:
    if not _cpu_index_answers():
        pytest.skip(
            f"{CPU_INDEX} cannot be reached from here: the command line is checked instead "
            "(test_a_machine_without_a_gpu_takes_the_cpu_index_where_it_answers and the tests "
            "after it)"
        )
    report = tmp_path / "report.json"
    done = run_step(tmp_path, {}, "--dry-run", "--ignore-installed", "--report", str(report))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"the CPU build from {CPU_INDEX}" in done.stdout
    names = {
        i["metadata"]["name"].lower(): i["metadata"]["version"]
        for i in json.loads(report.read_text())["install"]
    }
    assert names["torch"].endswith("+cpu")
    assert [n for n in names if n.startswith(CUDA_ONLY)] == []


@pytest.fixture
def fake(tmp_path: Path) -> Path:
    """A folder for the stand-ins: `python` (pip's arguments into pip-args.json, anything else
    to the real interpreter: the probe), `timeout` (its arguments into timeout-args.json, then
    the real one) and `nvidia-smi` (fails: no GPU)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real_timeout = shutil.which("timeout")
    assert real_timeout is not None
    (bin_dir / "timeout").write_text(
        f"#!/bin/sh\n{shlex.quote(sys.executable)} -c "
        "'import json, sys; json.dump(sys.argv[2:], open(sys.argv[1], \"w\"))' "
        f'{shlex.quote(str(tmp_path / "timeout-args.json"))} "$@"\n'
        f'exec {shlex.quote(real_timeout)} "$@"\n'
    )
    (bin_dir / "python").write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = -m ]; then {shlex.quote(sys.executable)} -c '
        "'import json, sys; json.dump(sys.argv[1:], open(sys.argv[1], \"w\"))' "
        f'{shlex.quote(str(tmp_path / "pip-args.json"))} "$@"; exit 0; fi\n'
        f'exec {shlex.quote(sys.executable)} "$@"\n'
    )
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\nexit 9\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return bin_dir


def _pip_args(tmp_path: Path) -> list[str]:
    args: list[str] = json.loads((tmp_path / "pip-args.json").read_text())
    return args[args.index("-m") :]


@pytest.fixture
def answering_index(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "index" / "torch").mkdir(parents=True)
    handler = functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "index")
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture
def silent_index() -> Iterator[str]:
    """Takes the connection and never answers, as a network that drops the index's packets."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def _env(fake: Path, index: str, **more: str) -> dict[str, str]:
    return {
        "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}",
        "SPEC_LSP_TORCH_INDEX": index,
        **more,
    }


def test_a_machine_without_a_gpu_takes_the_cpu_index_where_it_answers(
    fake: Path, tmp_path: Path, answering_index: str
) -> None:
    done = run_step(tmp_path, _env(fake, answering_index), python=str(fake / "python"))
    assert done.returncode == 0, done.stderr
    index = answering_index.rstrip("/")
    assert _pip_args(tmp_path) == [
        "-m",
        "pip",
        "install",
        "-c",
        "constraints-cpu.txt",
        "--extra-index-url",
        index,
        "torch",
    ]
    assert f"torch: the CPU build from {index} (no NVIDIA GPU)" in done.stdout


def test_an_index_that_does_not_answer_falls_back_to_the_ordinary_index_after_a_bounded_probe(
    fake: Path, tmp_path: Path, silent_index: str
) -> None:
    done = run_step(tmp_path, _env(fake, silent_index), python=str(fake / "python"))
    assert done.returncode == 0, done.stderr
    # The one wait before the fallback: the probe, 3 s for urllib, and `timeout` at 4 s over it
    # (a name lookup that hangs is not bound by urllib's timeout).
    probe = json.loads((tmp_path / "timeout-args.json").read_text())
    assert probe[0] == "4" and probe[-2:] == [f"{silent_index}/torch/", "3"]
    assert _pip_args(tmp_path) == ["-m", "pip", "install", "-c", "constraints-cpu.txt", "torch"]
    assert f"{silent_index} did not answer within 3 s: the ordinary index alone" in done.stdout


def test_a_gpu_or_spec_lsp_torch_cuda_takes_the_ordinary_index_and_cpu_forces_the_cpu_index(
    fake: Path, tmp_path: Path, answering_index: str
) -> None:
    index = answering_index.rstrip("/")
    plain = ["-m", "pip", "install", "-c", "constraints-cpu.txt", "torch"]
    cpu = [*plain[:-1], "--extra-index-url", index, "torch"]
    done = run_step(
        tmp_path, _env(fake, answering_index, SPEC_LSP_TORCH="cuda"), python=str(fake / "python")
    )
    assert _pip_args(tmp_path) == plain and "(SPEC_LSP_TORCH=cuda)" in done.stdout
    (fake / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 (UUID: GPU-0)'\n")
    done = run_step(tmp_path, _env(fake, answering_index), python=str(fake / "python"))
    assert _pip_args(tmp_path) == plain and "(nvidia-smi lists a GPU)" in done.stdout
    done = run_step(
        tmp_path, _env(fake, answering_index, SPEC_LSP_TORCH="cpu"), python=str(fake / "python")
    )
    assert _pip_args(tmp_path) == cpu
    done = run_step(
        tmp_path, _env(fake, answering_index, SPEC_LSP_TORCH="rocm"), python=str(fake / "python")
    )
    assert done.returncode == 2 and "use auto, cpu or cuda" in done.stderr


def test_pip_arguments_given_to_the_step_reach_pip(
    fake: Path, tmp_path: Path, silent_index: str
) -> None:
    run_step(
        tmp_path,
        _env(fake, silent_index),
        "--dry-run",
        "--report",
        "r.json",
        python=str(fake / "python"),
    )
    assert _pip_args(tmp_path)[-4:] == ["--dry-run", "--report", "r.json", "torch"]
