"""How spec-lsp starts Python, its children and itself, with no working directory on the path.

A command runs in whatever folder it was started in: an editor's is the workspace, a repository
someone else wrote. Two things put that folder on a Python process's import path, where a
`pip.py`, `torch.py`, `sitecustomize.py` or `spec_lsp/` of the workspace would be imported
instead of the real one:

- `python -m ...` and `python -c ...` put the working directory first (`-P`, Python 3.11, does
  not);
- an empty or relative entry of `PYTHONPATH` (`PYTHONPATH=:/x` names the working directory) is
  made absolute against it as the interpreter starts, before `site` imports `sitecustomize`.

So every Python child spec-lsp starts is `python -P` (`child_command`) with those `PYTHONPATH`
entries dropped from its environment (`child_env`), and every command drops them from its own
import path and environment as it starts (`drop_relative_pythonpath`, first thing in
`cli.main`). What a relative entry imported before that (a `sitecustomize.py`, a module named like
the standard library's) ran before any spec-lsp code and nothing here can undo it: the editors
start the server in the home folder, so an empty entry names no workspace. `-I` is not used: it
also ignores the user's own `PYTHONPATH` and user site, which a development setup may need.

Knows nothing of what the children do; standard library only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

PYTHONPATH = "PYTHONPATH"


def child_command(*args: str) -> list[str]:
    """This interpreter with `args` (`"-m", "pip", ...`), the working directory not on its path."""
    return [sys.executable, "-P", *args]


def safe_pythonpath(value: str) -> str:
    """`value` without its empty and relative entries (each names the working directory)."""
    return os.pathsep.join(e for e in value.split(os.pathsep) if os.path.isabs(e))


def child_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (the environment) with `PYTHONPATH`'s empty and relative entries dropped, and the
    variable itself where none is left."""
    env = dict(os.environ if base is None else base)
    if PYTHONPATH in env:
        if kept := safe_pythonpath(env[PYTHONPATH]):
            env[PYTHONPATH] = kept
        else:
            del env[PYTHONPATH]
    return env


def drop_relative_pythonpath() -> None:
    """Takes the folders that `PYTHONPATH`'s empty and relative entries put on `sys.path` off it
    (unless an absolute entry names them too), and those entries out of `os.environ`, so no
    later import, and no child, reads the working directory through them."""
    value = os.environ.get(PYTHONPATH)
    if value is None:
        return
    entries = value.split(os.pathsep)
    relative = {os.path.abspath(e) for e in entries if not os.path.isabs(e)}
    if not relative:
        return
    named = {os.path.normpath(e) for e in entries if os.path.isabs(e)}
    sys.path[:] = [p for p in sys.path if p in named or os.path.abspath(p) not in relative]
    if kept := safe_pythonpath(value):
        os.environ[PYTHONPATH] = kept
    else:
        del os.environ[PYTHONPATH]
