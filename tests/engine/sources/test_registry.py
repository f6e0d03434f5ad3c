"""`engine.registry`: wheels from an index's simple API with httpx, each checked against the sha256
the index gives, no pip. The index here is an `httpx.MockTransport` (no network) serving PEP 691
JSON or PEP 503 HTML, as PyPI and mirrors do."""

from __future__ import annotations

import hashlib
from pathlib import Path

import httpx
import pytest

from spec_lsp.engine.sources import registry
from spec_lsp.engine.sources.wheels import WheelError, Wheels

INDEX = "https://index.example/simple/"
BODIES = {
    "data_pkg_part1-1.0-py3-none-any.whl": b"one",
    "data_pkg_part2-1.0-py3-none-any.whl": b"2",
}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _index(kind: str, asked: list[str], bodies: dict[str, bytes] = BODIES) -> httpx.Client:
    """An index holding one wheel per project `data-pkg-partN`, plus an older version of each."""

    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        path = request.url.path
        if path.startswith("/files/"):
            return httpx.Response(200, content=bodies[path.removeprefix("/files/")])
        project = path.removeprefix("/simple/").strip("/")
        names = [n for n in bodies if registry.normalize(n.split("-")[0]) == project]
        if not names:
            return httpx.Response(404)
        files = [(n.replace("-1.0-", "-0.9-"), "0" * 64) for n in names]
        files += [(n, _sha(BODIES[n])) for n in names]  # the sha256 of the real bytes
        if kind == "json":
            body = {
                "files": [
                    {"filename": n, "url": f"/files/{n}", "hashes": {"sha256": h}} for n, h in files
                ]
            }
            return httpx.Response(200, json=body, headers={"content-type": registry.JSON_TYPE})
        links = "".join(f'<a href="../../files/{n}#sha256={h}">{n}</a>' for n, h in files)
        return httpx.Response(200, text=f"<html><body>{links}</body></html>")

    return httpx.Client(transport=httpx.MockTransport(handle), follow_redirects=True)


@pytest.fixture(autouse=True)
def index_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in registry.INDEX_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPEC_LSP_INDEX_URL", INDEX)


@pytest.mark.parametrize("kind", ["json", "html"])
def test_each_wheel_of_the_version_asked_arrives_with_the_indexs_sha256(
    kind: str, tmp_path: Path
) -> None:
    asked: list[str] = []
    progress: list[str] = []
    wheels = Wheels.series("data-pkg-part", 2, "1.0")
    registry.download(wheels, tmp_path, lambda m, _f: progress.append(m), _index(kind, asked))
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == BODIES
    assert asked[0] == f"{INDEX}data-pkg-part1/"  # the project page, by its normalized name
    assert progress[:1] == ["downloading wheel 1 of 2: data_pkg_part1-1.0-py3-none-any.whl"]


def test_a_wheel_whose_bytes_differ_from_the_indexs_sha256_is_refused_and_not_kept(
    tmp_path: Path,
) -> None:
    tampered = {**BODIES, "data_pkg_part1-1.0-py3-none-any.whl": b"not one"}
    with pytest.raises(WheelError, match="data_pkg_part1-1.0-py3-none-any.whl has sha256"):
        registry.download(
            Wheels.series("data-pkg-part", 1, "1.0"), tmp_path, None, _index("json", [], tampered)
        )
    assert list(tmp_path.iterdir()) == []


def test_a_project_or_version_the_index_lacks_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(WheelError, match="no project page https://index.example/simple/other1/"):
        registry.download(Wheels.series("other", 1, "1.0"), tmp_path, None, _index("json", []))
    with pytest.raises(WheelError, match=r"no wheel of data-pkg-part1==2\.0"):
        registry.download(
            Wheels.series("data-pkg-part", 1, "2.0"), tmp_path, None, _index("html", [])
        )


def test_an_unreachable_index_is_a_wheel_error_that_names_it(tmp_path: Path) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    client = httpx.Client(transport=httpx.MockTransport(refuse))
    with pytest.raises(
        WheelError, match="the index https://index.example/simple/ failed: ConnectError"
    ):
        registry.download(Wheels.series("data-pkg-part", 1, "1.0"), tmp_path, None, client)


def test_the_index_is_spec_lsps_setting_then_pips_then_uvs_then_pypi(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("UV_INDEX_URL", "https://uv.example/simple")
    monkeypatch.setenv("PIP_INDEX_URL", "https://pip.example/simple")
    assert registry.index_url() == INDEX
    monkeypatch.delenv("SPEC_LSP_INDEX_URL")
    assert registry.index_url() == "https://pip.example/simple/"
    monkeypatch.delenv("PIP_INDEX_URL")
    assert registry.index_url() == "https://uv.example/simple/"
    monkeypatch.delenv("UV_INDEX_URL")
    assert registry.index_url() == registry.PYPI == "https://pypi.org/simple/"
