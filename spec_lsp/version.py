"""The version of spec-lsp: the installed distribution's, from its package metadata.

`__version__` is the one version every part reports: `spec-lsp --version`, `spec-lsp doctor` and
the server's `serverInfo`. A bare checkout (not installed) has no metadata; it reports
`UNINSTALLED`, a PEP 440 version below every release.
"""

from __future__ import annotations

from importlib import metadata

UNINSTALLED = "0+unknown"


def installed_version() -> str | None:
    """The version of the installed `spec-lsp` distribution; None when it is not installed."""
    try:
        return metadata.version("spec-lsp")
    except metadata.PackageNotFoundError:
        return None


__version__: str = installed_version() or UNINSTALLED


def version() -> str:
    """`__version__` as a person reads it: with how to install, in a bare checkout."""
    if __version__ == UNINSTALLED:
        return f"{__version__} (not installed: pip install -e .)"
    return __version__
