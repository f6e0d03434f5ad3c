"""Fuzzing the protocol: a hypothesis state machine drives the real server (tiny preset), over
stdio and over TCP (`serve --tcp`: the same traffic on an admitted connection, plus other
connections that must get nothing while it is served).

Steps: didOpen / didChange (ranges in and out of the document, reversed, inside surrogate pairs,
in the encoding the server negotiated: utf-16, utf-8 or utf-32), inline and completion requests,
cancels of known and unknown ids, configuration changes with wrong types, closes and reopens, and
raw garbage (invalid JSON, wrong or huge Content-Length, a header without a body, deeply nested
JSON, malformed params). Invariants: the process never exits; every request gets a response or an
error; the server's text of each document (`spec-lsp/documentText`) equals the model of it kept
here; memory stays bounded; over TCP the connection stays open. One server per encoding (and
the TCP one) serves every example (starting one takes seconds); each example uses its own
document URIs and closes them at the end.

`SPEC_LSP_FUZZ_EXAMPLES` sets the examples per encoding (`make fuzz` runs thousands).
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tests.fuzz.lsp_process import ServerProcess, serve_command
from tests.fuzz.shared_process import TOKEN, SharedServer, SocketClient, initialize_message

ENCODINGS = ("utf-16", "utf-8", "utf-32")
# Each server the fuzz drives: stdio in every encoding, TCP in utf-16 (with the model).
TRANSPORTS = [f"stdio {enc}" for enc in ENCODINGS] + ["tcp utf-16"]
EXAMPLES = int(os.environ.get("SPEC_LSP_FUZZ_EXAMPLES", "100"))
STEPS = int(os.environ.get("SPEC_LSP_FUZZ_STEPS", "16"))
RESPONSE_TIMEOUT_S = 60.0
RSS_GROWTH_LIMIT = 600 * 2**20  # over a whole run, after the model is loaded
MAX_TOKENS = 4  # short generations keep examples fast; every code path still runs
OPTIONS = {"maxTokens": MAX_TOKENS, "debounceMs": 0, "enabled": True}
# The model runs behind the utf-16 server; the others fail their load at once (answering empty),
# so starting them costs no model load: they fuzz documents and positions in their encodings.
PRESETS = {"utf-16": "tiny", "utf-8": "no-such-preset", "utf-32": "no-such-preset"}
SHRINK = os.environ.get("SPEC_LSP_FUZZ_SHRINK") == "1"
pytestmark = pytest.mark.timeout(3600)

CHARS = list("ab xy_(){}:=.\t\n") + ["é", "日", "😀", "🎉", "\u0301"]
text_st = st.text(alphabet=st.sampled_from(CHARS), max_size=24)
language_st = st.sampled_from(["python", "javascript", "rust", "plaintext", "", "no-such-lang"])
json_st = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
uids = itertools.count()


# -- the model of a document: the LSP rules the server follows ----------------------------------
def units(ch: str, encoding: str) -> int:
    if encoding == "utf-32":
        return 1
    if encoding == "utf-8":
        return len(ch.encode("utf-8", "surrogatepass"))
    return len(ch.encode("utf-16-le", "surrogatepass")) // 2


def offset(text: str, line: int, character: int, encoding: str) -> int:
    """The str offset of an LSP position: past the last line is the end of the document, past
    a line's end is that line's end, inside a character (a surrogate pair) is its start."""
    lines = text.split("\n")
    if line >= len(lines):
        return len(text)
    start = sum(len(s) + 1 for s in lines[:line])
    seen = 0
    for i, ch in enumerate(lines[line]):
        seen += units(ch, encoding)
        if seen > character:
            return start + i
    return start + len(lines[line])


def apply_change(text: str, rng: tuple[int, int, int, int] | None, new: str, enc: str) -> str:
    if rng is None:
        return new
    a, b = offset(text, rng[0], rng[1], enc), offset(text, rng[2], rng[3], enc)
    a, b = min(a, b), max(a, b)
    return text[:a] + new + text[b:]


def frame(body: bytes, length: int | None = None) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % (len(body) if length is None else length) + body


def message(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg).encode()  # ensure_ascii: lone surrogates travel as \ud800 escapes


# -- the servers, one per encoding, shared by all examples ---------------------------------------
class Fuzzed:
    """A server under fuzz: the client the machine speaks through, and for TCP the server."""

    def __init__(
        self, client: ServerProcess | SocketClient, shared: SharedServer | None = None
    ) -> None:
        self.client, self.shared = client, shared
        self.process = client.process
        self.rss0 = 0


@pytest.fixture(scope="module")
def fuzz_servers() -> Iterator[dict[str, Fuzzed]]:
    servers = {
        f"stdio {enc}": Fuzzed(ServerProcess(serve_command(PRESETS[enc]))) for enc in ENCODINGS
    }
    shared = SharedServer(PRESETS["utf-16"])
    try:
        servers["tcp utf-16"] = Fuzzed(shared.connect(), shared)
        for name, fuzzed in servers.items():
            enc = name.split()[1]
            result = fuzzed.client.initialize(OPTIONS, encodings=[enc])
            assert result["capabilities"]["positionEncoding"] == enc
        for name, fuzzed in servers.items():
            preset = PRESETS[name.split()[1]]
            assert fuzzed.client.wait_loaded()["state"] == (
                "ready" if preset == "tiny" else "failed"
            )
            fuzzed.rss0 = fuzzed.process.memory_info().rss
        yield servers
    finally:
        for fuzzed in servers.values():
            if isinstance(fuzzed.client, ServerProcess) and fuzzed.client.alive():
                fuzzed.client.close()
        shared.close()


class ProtocolMachine(RuleBasedStateMachine):
    server: ServerProcess | SocketClient  # over stdio, or a connection to `shared`
    shared: SharedServer | None = None
    encoding: str

    def __init__(self) -> None:
        super().__init__()
        self.prefix = f"file:///fuzz/{next(uids)}"
        self.docs: dict[str, tuple[int, str]] = {}  # uri -> (version, text), as the server has it
        self.closed: list[str] = []
        self.pending: list[tuple[str, Future[dict[str, Any]]]] = []

    # -- documents ---------------------------------------------------------------------------
    @initialize(text=text_st)
    def first_document(self, text: str) -> None:
        self.open(f"{self.prefix}/0.py", "python", text)

    def open(self, uri: str, language: str, text: str) -> None:
        doc = {"uri": uri, "languageId": language, "version": 1, "text": text}
        self.server.notify("textDocument/didOpen", {"textDocument": doc})
        self.docs[uri] = (1, text)
        if uri in self.closed:
            self.closed.remove(uri)

    @rule(n=st.integers(1, 3), language=language_st, text=text_st)
    def open_another(self, n: int, language: str, text: str) -> None:
        self.open(f"{self.prefix}/{n}.py", language, text)

    @precondition(lambda self: self.closed)
    @rule(data=st.data(), text=text_st)
    def reopen(self, data: st.DataObject, text: str) -> None:
        self.open(data.draw(st.sampled_from(self.closed)), "python", text)

    @precondition(lambda self: self.docs)
    @rule(data=st.data())
    def close(self, data: st.DataObject) -> None:
        uri = data.draw(st.sampled_from(sorted(self.docs)))
        self.server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        del self.docs[uri]
        self.closed.append(uri)

    def draw_range(self, data: st.DataObject, text: str) -> tuple[int, int, int, int]:
        lines = text.split("\n")
        widest = max(sum(units(c, self.encoding) for c in line) for line in lines)
        line_st, char_st = st.integers(0, len(lines) + 1), st.integers(0, widest + 2)
        return (data.draw(line_st), data.draw(char_st), data.draw(line_st), data.draw(char_st))

    @precondition(lambda self: self.docs)
    @rule(data=st.data())
    def change(self, data: st.DataObject) -> None:
        uri = data.draw(st.sampled_from(sorted(self.docs)))
        version, text = self.docs[uri]
        changes = []
        for _ in range(data.draw(st.integers(1, 3))):
            new = data.draw(text_st)
            if data.draw(st.integers(0, 9)) == 0:
                changes.append({"text": new})
                text = apply_change(text, None, new, self.encoding)
                continue
            rng = self.draw_range(data, text)
            changes.append(
                {
                    "range": {
                        "start": {"line": rng[0], "character": rng[1]},
                        "end": {"line": rng[2], "character": rng[3]},
                    },
                    "text": new,
                }
            )
            text = apply_change(text, rng, new, self.encoding)
        params = {"textDocument": {"uri": uri, "version": version + 1}, "contentChanges": changes}
        self.server.notify("textDocument/didChange", params)
        self.docs[uri] = (version + 1, text)

    @precondition(lambda self: self.docs)
    @rule(data=st.data(), bad=st.sampled_from([-1, 2**31, None, "x", []]))
    def change_with_an_invalid_position_is_dropped_whole(
        self, data: st.DataObject, bad: Any
    ) -> None:
        uri = data.draw(st.sampled_from(sorted(self.docs)))
        version, _ = self.docs[uri]
        good = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}}
        broken = {
            "range": {"start": {"line": bad, "character": 0}, "end": {"line": 0, "character": 0}}
        }
        params = {
            "textDocument": {"uri": uri, "version": version + 7},
            "contentChanges": [{**good, "text": "lost"}, {**broken, "text": "x"}],
        }
        self.server.notify("textDocument/didChange", params)

    @rule(text=text_st)
    def change_an_unopened_document(self, text: str) -> None:
        params = {
            "textDocument": {"uri": f"{self.prefix}/never-opened.py", "version": 2},
            "contentChanges": [{"text": text}],
        }
        self.server.notify("textDocument/didChange", params)

    # -- requests ----------------------------------------------------------------------------
    def request(self, method: str, params: Any, msg_id: Any = None) -> Future[dict[str, Any]]:
        done = self.server.request_async(method, params, msg_id)
        self.pending.append((method, done))
        return done

    @rule(
        data=st.data(),
        method=st.sampled_from(["textDocument/inlineCompletion", "textDocument/completion"]),
        trigger=st.sampled_from([1, 2]),
    )
    def complete(self, data: st.DataObject, method: str, trigger: int) -> None:
        uris = sorted(self.docs) + self.closed + [f"{self.prefix}/never-opened.py"]
        uri = data.draw(st.sampled_from(uris))
        text = self.docs.get(uri, (0, ""))[1]
        rng = self.draw_range(data, text)
        params = {
            "textDocument": {"uri": uri},
            "position": {"line": rng[0], "character": rng[1]},
            "context": {"triggerKind": trigger},
        }
        self.request(method, params)

    @precondition(lambda self: self.pending)
    @rule(data=st.data())
    def cancel_a_known_request(self, data: st.DataObject) -> None:
        # ids are "t<n>" (see ServerProcess.request_async); cancel one that may still run
        _method, done = data.draw(st.sampled_from(self.pending))
        msg_id = getattr(done, "msg_id", None)
        if msg_id is not None:
            self.server.notify("$/cancelRequest", {"id": msg_id})

    @rule(msg_id=st.one_of(st.integers(-5, 10**12), st.text(max_size=5), st.none()))
    def cancel_an_unknown_request(self, msg_id: Any) -> None:
        self.server.notify("$/cancelRequest", {"id": msg_id})

    @rule(
        key=st.sampled_from(
            [
                "maxTokens",
                "debounceMs",
                "enabledLanguages",
                "temperature",
                "speculation",
                "kvReuse",
                "preset",
                "device",
                "trustRemoteCode",
                "enabled",
                "unknownKey",
            ]
        ),
        value=json_st,
        nested=st.booleans(),
    )
    def configure_with_a_wrong_type(self, key: str, value: Any, nested: bool) -> None:
        if key in ("preset", "device", "trustRemoteCode") and isinstance(value, (str, bool)):
            value = [value]  # only invalid values: a valid one would reload the models
        if key == "enabled" and isinstance(value, bool):
            value = str(value)
        section = {key: value}
        settings_ = {"specLsp": section} if nested else section
        self.server.notify("workspace/didChangeConfiguration", {"settings": settings_})

    @rule(settings_=json_st)
    def configure_with_garbage(self, settings_: Any) -> None:
        if isinstance(settings_, dict):
            settings_ = {k: v for k, v in settings_.items() if k not in ("specLsp", "spec-lsp")}
            for key in ("preset", "device", "trustRemoteCode", "enabled"):
                settings_.pop(key, None)
        self.server.notify("workspace/didChangeConfiguration", {"settings": settings_})

    # -- raw garbage -------------------------------------------------------------------------
    @rule(body=st.binary(max_size=40))
    def invalid_json(self, body: bytes) -> None:
        self.server.raw(frame(body.replace(b"\n", b" ") or b"{"))

    @rule(depth=st.integers(1000, 200_000))
    def deeply_nested_json(self, depth: int) -> None:
        self.server.raw(frame(b"[" * depth + b"]" * depth))

    @rule(value=json_st)
    def json_that_is_not_a_message(self, value: Any) -> None:
        if isinstance(value, dict):
            value.pop("jsonrpc", None)
        self.server.raw(frame(message(value) if value is not None else b"null"))

    @rule(cut=st.integers(1, 30))
    def content_length_too_short(self, cut: int) -> None:
        body = message({"jsonrpc": "2.0", "method": "$/fuzz/lost", "params": {"x": "y" * 30}})
        self.server.raw(frame(body, len(body) - cut))

    @rule(extra=st.integers(1, 30))
    def content_length_too_long(self, extra: int) -> None:
        body = message({"jsonrpc": "2.0", "method": "$/fuzz/lost", "params": {}})
        self.server.raw(frame(body, len(body) + extra) + b"x" * extra)

    @rule(length=st.integers(0, 60))
    def header_without_a_body(self, length: int) -> None:
        sacrifice = frame(message({"jsonrpc": "2.0", "method": "$/fuzz/lost", "params": [0] * 30}))
        self.server.raw(b"Content-Length: %d\r\n\r\n" % length + sacrifice)

    @rule(length=st.sampled_from([2**26 + 1, 2**40, 10**20]))
    def huge_content_length(self, length: int) -> None:
        self.server.raw(b"Content-Length: %d\r\n\r\n{}" % length)

    @rule(garbage=st.binary(max_size=60))
    def garbage_between_frames(self, garbage: bytes) -> None:
        self.server.raw(garbage.replace(b"Content-Length", b"Content-Lxngth") + b"\r\n\r\n")

    @rule(
        method=st.sampled_from(
            [
                "textDocument/inlineCompletion",
                "textDocument/completion",
                "spec-lsp/stats",
                "spec-lsp/documentText",
                "workspace/executeCommand",
                "no/such/method",
            ]
        ),
        params=json_st,
        msg_id=st.one_of(
            st.integers(0, 2**31), st.text(min_size=1, max_size=5).map(lambda s: "r" + s)
        ),
    )
    def request_with_malformed_params(self, method: str, params: Any, msg_id: Any) -> None:
        self.request(method, params, msg_id=f"m{msg_id}")

    @rule(n=st.integers(1, 3))
    def text_with_a_lone_surrogate(self, n: int) -> None:
        uri, text = f"{self.prefix}/{n}.py", "x = '\ud83d'\n"
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        self.server.raw(
            frame(
                message(
                    {
                        "jsonrpc": "2.0",
                        "method": "textDocument/didOpen",
                        "params": {"textDocument": doc},
                    }
                )
            )
        )
        self.docs[uri] = (1, text)
        if uri in self.closed:
            self.closed.remove(uri)

    # -- other connections (TCP): without the token nothing; with it, a session of its own -----
    @precondition(lambda self: self.shared is not None)
    @rule(
        before=st.sampled_from([b"", b"POST / HTTP/1.1\r\nContent-Length: 999\r\n\r\n"])
        | st.binary(max_size=40),
        token=st.sampled_from([None, "x" + TOKEN]),
    )
    def another_connection_without_the_token_gets_nothing(
        self, before: bytes, token: str | None
    ) -> None:
        assert self.shared is not None
        assert self.shared.refused(before + frame(message(initialize_message(token)))) == b""

    @precondition(lambda self: self.shared is not None)
    @rule()
    def another_client_with_the_token_sees_none_of_these_documents(self) -> None:
        # Served at the same time as this client, in a session of its own.
        assert self.shared is not None
        other = self.shared.connect()
        try:
            other.initialize()
            for uri in sorted(self.docs):
                assert other.result("spec-lsp/documentText", {"uri": uri}) is None
        finally:
            other.close()

    # -- invariants --------------------------------------------------------------------------
    @invariant()
    def server_text_equals_the_model(self) -> None:
        uris = sorted(self.docs) + self.closed[-2:]
        asked = [
            (uri, self.server.request_async("spec-lsp/documentText", {"uri": uri})) for uri in uris
        ]
        for uri, done in asked:
            response = done.result(RESPONSE_TIMEOUT_S)
            assert "error" not in response, response
            got = response["result"]
            if uri in self.docs:
                version, text = self.docs[uri]
                assert got is not None, f"{uri} is not open on the server"
                assert (got["version"], got["text"]) == (version, text)
            else:
                assert got is None, f"{uri} is still open on the server"
        assert self.server.alive(), "the server exited"

    def teardown(self) -> None:
        for uri in list(self.docs):
            self.server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        self.server.notify("workspace/didChangeConfiguration", {"settings": {"specLsp": OPTIONS}})
        for method, done in self.pending:
            response = done.result(RESPONSE_TIMEOUT_S)  # every request is answered
            assert ("result" in response) != ("error" in response), (method, response)
        assert self.server.alive(), "the server exited"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_server_survives_and_tracks_documents_under_random_protocol_traffic(
    fuzz_servers: dict[str, Fuzzed], transport: str
) -> None:
    fuzzed = fuzz_servers[transport]

    class Machine(ProtocolMachine):
        pass

    Machine.server, Machine.shared = fuzzed.client, fuzzed.shared
    Machine.encoding = transport.split()[1]
    run_state_machine_as_test(
        Machine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            derandomize=False,
            database=None,
            phases=list(Phase) if SHRINK else [Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        ),
    )
    rss = fuzzed.process.memory_info().rss
    assert rss - fuzzed.rss0 < RSS_GROWTH_LIMIT, f"RSS grew {(rss - fuzzed.rss0) / 2**20:.0f} MiB"


BIG = os.environ.get("SPEC_LSP_FUZZ_BIG") == "1" or EXAMPLES >= 1000  # `make fuzz`
TEN_MB_LINE = "value_%07d = compute(value, 'é日😀')\n"


def ten_mb_document() -> str:
    return "".join(TEN_MB_LINE % i for i in range(10 * 2**20 // len(TEN_MB_LINE)))


def test_a_10_mb_document_does_not_stall_other_requests() -> None:
    """The request after a 10 MB didOpen is answered, and the document is kept whole; what keeps
    the server from stalling on it (it never reaches the syntax layer) is counted, not timed, in
    tests/completion/test_syntax_port.py."""
    server = ServerProcess(serve_command("no-such-preset"))
    try:
        server.initialize(OPTIONS)
        server.wait_loaded()
        doc = {"uri": "file:///fuzz/stall.py", "languageId": "python", "version": 1}
        text = ten_mb_document()
        server.notify("textDocument/didOpen", {"textDocument": {**doc, "text": text}})
        assert "state" in server.result("spec-lsp/status")
        got = server.result("spec-lsp/documentText", {"uri": doc["uri"]})
        assert got["version"] == 1 and got["text"] == text
    finally:
        server.process.kill()
        server.close()


@pytest.mark.skipif(not BIG, reason="slow (a minute here): make fuzz runs it")
def test_a_10_mb_document_is_tracked_and_answered(
    fuzz_servers: dict[str, Fuzzed],
) -> None:
    fuzzed = fuzz_servers["stdio utf-16"]
    server, rss0 = fuzzed.client, fuzzed.rss0
    uri = "file:///fuzz/huge.py"
    text = ten_mb_document()
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    server.notify("textDocument/didOpen", {"textDocument": doc})
    last = text.count("\n")
    change = {
        "range": {"start": {"line": last, "character": 0}, "end": {"line": last, "character": 0}},
        "text": "total = ",
    }
    params = {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [change]}
    server.notify("textDocument/didChange", params)
    position = {"line": last, "character": 8}
    answer = server.request(
        "textDocument/inlineCompletion",
        {"textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": 2}},
        timeout=120,
    )
    assert "result" in answer, answer
    got = server.result("spec-lsp/documentText", {"uri": uri}, timeout=120)
    assert got["version"] == 2 and got["text"] == text + "total = "
    server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert server.alive()
    rss = server.process.memory_info().rss
    assert rss - rss0 < 2 * RSS_GROWTH_LIMIT, f"RSS grew {(rss - rss0) / 2**20:.0f} MiB"
