"""What spec-lsp writes goes where its path says and reads as what the server wrote (issue 41
items 9, 11): a recording (`record --out`) and the log file (`serve --log-file`) are never written
through a symbolic link a workspace planted, the log file is created 0600 (at DEBUG it holds every
document's text), and no string a client sends can start a log line of its own."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from spec_lsp.logs import printable
from spec_lsp.owner_file import OwnerFileError, open_owner_only
from tests.fuzz.lsp_process import ServerProcess, serve_command
from tests.replay.builders import ROOT, fake_server_cmd, replay_cli_cmd

TARGET_TEXT = "export PATH=$HOME/bin:$PATH\n"  # a file of the user's that a link points at
STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")  # how each record's line starts
FORGED = "2099-01-01 00:00:00,000 ERROR spec_lsp.access: forged by the client"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A link named like the file a command will write, to a file of the user's (0644)."""
    target, link = tmp_path / "bashrc", tmp_path / "ws" / "out"
    target.write_text(TARGET_TEXT)
    target.chmod(0o644)
    link.parent.mkdir()
    link.symlink_to(target)
    return target, link


def test_a_recording_is_never_written_through_a_planted_link(planted: tuple[Path, Path]) -> None:
    target, link = planted
    proc = subprocess.run(
        replay_cli_cmd("record", "--out", str(link), "--", *fake_server_cmd()),
        input=b"",
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 2 and b"not a regular file" in proc.stderr, proc.stderr
    assert target.read_text() == TARGET_TEXT and mode(target) == 0o644


def test_the_log_file_is_created_0600_and_never_through_a_planted_link(
    tmp_path: Path, planted: tuple[Path, Path]
) -> None:
    target, link = planted
    serve = [*serve_command("no-such-preset"), "--log-level", "DEBUG"]
    refused = subprocess.run(
        [*serve, "--log-file", str(link)], input=b"", capture_output=True, timeout=60
    )
    assert refused.returncode == 2 and b"not a regular file" in refused.stderr, refused.stderr
    assert target.read_text() == TARGET_TEXT and mode(target) == 0o644
    log = tmp_path / "server.log"
    done = subprocess.run(
        [*serve, "--log-file", str(log)],
        input=b"",
        capture_output=True,
        timeout=60,
        preexec_fn=lambda: os.umask(0o000),  # the most permissive umask there is
    )
    assert done.returncode == 0, done.stderr
    assert log.read_text() and mode(log) == 0o600


def test_an_owner_only_file_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    opened = threading.Thread(target=lambda: pytest.raises(OwnerFileError, open_owner_only, fifo))
    opened.start()
    opened.join(10)
    assert not opened.is_alive()
    (tmp_path / "log").write_text("kept\n")
    (tmp_path / "log").chmod(0o644)
    with open_owner_only(tmp_path / "log", append=True) as fh:
        fh.write("added\n")
    assert (tmp_path / "log").read_text() == "kept\nadded\n" and mode(tmp_path / "log") == 0o600


def test_a_client_string_cannot_start_a_log_line(tmp_path: Path) -> None:
    """A method name before initialize, a URI, anything a client chose: written escaped, one
    record one line, so every line that starts flush is the server's own record."""
    log = tmp_path / "server.log"
    server = ServerProcess(serve_command("no-such-preset", "--log-file", str(log)))
    try:
        server.notify(f"x\n{FORGED}\r\x1b[2K", {})  # dropped before initialize, and logged
        server.initialize({})
        server.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": f"file:///a\n{FORGED}", "version": 2}, "contentChanges": []},
        )
        server.result("spec-lsp/status")
    finally:
        server.close()
    lines = log.read_text().splitlines()
    assert any("dropped 'x\\n2099" in line for line in lines), lines
    assert any("not open: 'file:///a\\n2099" in line for line in lines), lines
    assert not any(line.startswith("2099") for line in lines), lines
    assert all(STAMP.match(line) or line.startswith(" ") for line in lines), lines
    assert not any("\x1b" in line or "\r" in line for line in lines), lines


def test_printable_escapes_every_line_break_and_control_character() -> None:
    assert printable("plain text, ünïcode") == "plain text, ünïcode"
    assert printable("a\nb\rc\x1b[2Kd\u2028e\x85f\tg") == "a\\nb\\rc\\x1b[2Kd\\u2028e\\x85f\\tg"
