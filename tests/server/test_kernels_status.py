"""`spec-lsp/status`'s kernelsError reads the kernels' module only once it is whole: the worker
thread imports it (with torch, seconds) while the event loop answers status requests, and a
status read the half-made module and failed with AttributeError (seen in CI, 2026-12-04)."""

from __future__ import annotations

import importlib.machinery
import sys
import types

import pytest

from spec_lsp.server.language_server import kernels_error

NAME = "spec_lsp.engine.weights.native"


def _module(initializing: bool, failure: str | None = None) -> types.ModuleType:
    module = types.ModuleType(NAME)
    module.__spec__ = importlib.machinery.ModuleSpec(NAME, None)
    module.__spec__._initializing = initializing  # type: ignore[attr-defined]
    if failure is not None:
        module.failure = lambda: failure  # type: ignore[attr-defined]
    return module


def test_a_module_still_being_imported_reports_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, NAME, _module(initializing=True))
    assert kernels_error() is None
    half = _module(initializing=True, failure="half made")
    monkeypatch.setitem(sys.modules, NAME, half)
    assert kernels_error() is None


def test_a_whole_module_reports_its_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, NAME, _module(initializing=False, failure="no compiler"))
    assert kernels_error() == "no compiler"
    monkeypatch.delitem(sys.modules, NAME)
    assert kernels_error() is None
