"""No file the wheel ships names a folder of the machine it was written on (issue 42 item 9:
`engine/sources/catalog.py` pointed at /work/shared/..., the bundled head's README at
/root/.pyenv/... and /work/distill-head/...): what a user installs reads the same on every machine.
The files are those `tests/packaging/test_wheel.py` builds the wheel from, as text; a placeholder
such as `/path/to/model.gguf` or `~/models` is fine."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("README.md", "pyproject.toml", "LICENSE", "spec_lsp", "models")
SKIPPED = ("__pycache__", "bundled-draft")  # bytecode, and a local draft that is not shipped
# A home or work folder spelled out: /work/..., /home/<user>/..., /root/..., /Users/<user>/...
MACHINE_PATH = re.compile(r"(?<![\w.~/-])/(?:work|home|root|Users)/[\w.-]+")


def shipped_text() -> Iterator[tuple[Path, str]]:
    for name in SHIPPED:
        top = ROOT / name
        for path in sorted(top.rglob("*")) if top.is_dir() else [top]:
            if not path.is_file() or any(part in SKIPPED for part in path.parts):
                continue
            data = path.read_bytes()
            if b"\0" not in data[:8192]:  # text: weights and other binaries are skipped
                yield path, data.decode("utf-8", errors="replace")


def machine_paths(text: str) -> list[str]:
    return MACHINE_PATH.findall(text)


def test_no_shipped_file_names_a_folder_of_the_development_machine() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {hit}"
        for path, text in shipped_text()
        for hit in machine_paths(text)
    ]
    assert found == [], "absolute paths of one machine in shipped files: " + "; ".join(found)


def test_the_check_tells_a_machine_path_from_a_placeholder() -> None:
    assert machine_paths("see /work/shared/data/README.md") == ["/work/shared"]
    assert machine_paths("--corpus /root/.pyenv/versions/3.11.7") == ["/root/.pyenv"]
    assert machine_paths("/home/alice/models/x.gguf and /Users/bob/x") == [
        "/home/alice",
        "/Users/bob",
    ]
    placeholders = "/path/to/spec-lsp/.venv/bin/spec-lsp ~/models/x.gguf ~/.cache/spec-lsp/run"
    assert machine_paths(placeholders + " $XDG_RUNTIME_DIR/spec-lsp https://x.org/home/page") == []
