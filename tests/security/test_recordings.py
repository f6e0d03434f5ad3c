"""A recorded session holds what was typed: `spec-lsp record` creates it readable by its owner
only (0600) under a permissive umask, and tightens a file that was there before."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from spec_lsp.owner_file import open_owner_only
from tests.replay.builders import ROOT, fake_server_cmd, replay_cli_cmd

INITIALIZE = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}}'
OPEN = (
    b'{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":'
    b'{"uri":"file:///w/a.py","languageId":"python","version":1,"text":"API_KEY = 1\\n"}}}'
)
EXIT = b'{"jsonrpc":"2.0","method":"exit"}'


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_recording_is_created_0600_whatever_the_umask(tmp_path: Path) -> None:
    out = tmp_path / "session.jsonl"
    sent = b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in (INITIALIZE, OPEN, EXIT))
    proc = subprocess.run(
        replay_cli_cmd("record", "--out", str(out), "--", *fake_server_cmd()),
        input=sent,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=60,
        preexec_fn=lambda: os.umask(0o000),  # the most permissive umask there is
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert "API_KEY" in out.read_text()  # what was typed is in it: hence its mode
    assert mode(out) == 0o600


def test_an_existing_file_is_tightened_and_truncated(tmp_path: Path) -> None:
    out = tmp_path / "old.jsonl"
    out.write_text("an older, longer session\n" * 10)
    out.chmod(0o644)
    with open_owner_only(out) as fh:
        fh.write("new\n")
    assert mode(out) == 0o600 and out.read_text() == "new\n"
