"""engine/api.py is the whole contract: every backend class (the local engine, llama-server,
OpenAI-compatible, the command's recorder and the tests' fakes) has every `Backend` member and
declares `Capabilities` that match what it does; the stop reasons and the names of methods,
weight formats and forwards are defined there once and imported everywhere else."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from spec_lsp import config, presets
from spec_lsp.engine import api, forward, loading
from spec_lsp.engine.api import (
    CAPABILITY_METHODS,
    METHODS,
    STOP_REASONS,
    Backend,
    BackendBase,
    Capabilities,
    GenerationResult,
    GenerationStats,
    as_method,
)
from spec_lsp.engine.weights import quant
from spec_lsp.inprocess import LastResultBackend
from spec_lsp.remote import RemoteSpec, connect
from spec_lsp.remote.llama_server import STOP_TYPES, LlamaServerBackend
from spec_lsp.remote.openai import FINISH, OpenAIBackend
from tests.engine.conftest import make_engine
from tests.fakes import CheapCancelBackend, PrefillBackend, RecordingBackend, ScriptedBackend
from tests.server.fault_server import FaultyBackend

UNREACHABLE = "http://127.0.0.1:9"  # nothing is sent: the checks below make no request
MEMBERS = [name for name in vars(Backend) if not name.startswith("_")]


@pytest.fixture
def remotes() -> Iterator[list[Any]]:
    made = [
        connect(RemoteSpec(kind="llama-server", url=UNREACHABLE)),
        connect(RemoteSpec(kind="llama-server", url=UNREACHABLE, warmup=False)),
        connect(RemoteSpec(kind="openai", url=UNREACHABLE, model="m")),
    ]
    yield made
    for backend in made:
        backend.close()


def backends(target: Any, tokenizer: Any, remotes: list[Any]) -> list[Any]:
    local = make_engine(target, tokenizer)
    return [
        local,
        *remotes,
        LastResultBackend(),
        ScriptedBackend("x"),
        CheapCancelBackend("x"),
        PrefillBackend(0),
        RecordingBackend(local),
        RecordingBackend(remotes[0]),
        FaultyBackend(local),  # tests/server/fault_server.py: passes the rest on by __getattr__
    ]


WRAPPERS = (RecordingBackend, FaultyBackend)  # they declare what the backend they wrap does


def overrides(backend: Any, method: str) -> bool:
    return getattr(type(backend), method, None) is not getattr(BackendBase, method)


def test_the_protocol_names_the_capabilities_and_every_optional_method() -> None:
    assert MEMBERS == [
        "capabilities",
        "generate",
        "count_tokens",
        "forget",
        "persist",
        "other_files",
        "status",
        "engine_stats",
        "warmup_stats",
    ]
    fields = [f.name for f in Capabilities.__dataclass_fields__.values()]
    assert list(CAPABILITY_METHODS) == fields
    assert all(m is None or m in MEMBERS for m in CAPABILITY_METHODS.values())


def test_every_backend_has_every_member_of_the_contract(target, tokenizer, remotes) -> None:  # type: ignore[no-untyped-def]
    for backend in backends(target, tokenizer, remotes):
        assert isinstance(backend.capabilities, Capabilities), type(backend).__name__
        for name in MEMBERS[1:]:
            assert callable(getattr(backend, name, None)), (type(backend).__name__, name)
        for name in MEMBERS[1:]:  # the signatures are the protocol's (self aside)
            want = list(inspect.signature(getattr(Backend, name)).parameters)[1:]
            assert list(inspect.signature(getattr(backend, name)).parameters) == want, name


def test_a_declared_capability_is_a_method_of_the_class_and_an_undeclared_one_does_nothing(
    target, tokenizer, remotes
) -> None:  # type: ignore[no-untyped-def]
    for backend in backends(target, tokenizer, remotes):
        caps = backend.capabilities
        name = type(backend).__name__
        for flag, method in CAPABILITY_METHODS.items():
            if method is None:
                continue
            if getattr(caps, flag):
                assert isinstance(backend, WRAPPERS) or overrides(backend, method), name
            elif method == "other_files":
                assert not overrides(backend, method) or isinstance(backend, WRAPPERS)
            else:
                assert getattr(backend, method)() is None, (name, method)
        assert not caps.warm_up or caps.cheap_cancel, name  # a warm-up is a cancellable prefill


def test_each_backend_declares_what_it_does(target, tokenizer, remotes) -> None:  # type: ignore[no-untyped-def]
    local = make_engine(target, tokenizer)
    llama, llama_cold, openai = remotes
    # The local engine stops in a step and keeps its KV (tests/engine/test_kv_reuse.py); it
    # reports no status or figures of its own.
    assert local.capabilities == Capabilities(cheap_cancel=True, warm_up=True)
    assert isinstance(llama, LlamaServerBackend) and isinstance(openai, OpenAIBackend)
    remote = dict(status=True, engine_stats=True)
    assert llama.capabilities == Capabilities(other_files=True, remote_warmups=True, **remote)
    assert llama_cold.capabilities == Capabilities(other_files=True, **remote)
    assert openai.capabilities == Capabilities(**remote)
    assert llama.warmup_stats() is not None and llama_cold.warmup_stats() is None
    assert llama.status()["available"] is not None
    assert LastResultBackend().capabilities == Capabilities()  # `spec-lsp complete`: as before
    assert RecordingBackend(llama).capabilities == llama.capabilities


def test_llama_server_sends_the_other_files_it_is_told_as_input_extra(remotes) -> None:  # type: ignore[no-untyped-def]
    from spec_lsp.engine.api import GenerationRequest

    llama = remotes[0]
    head = "# a.py\nx = 1\n"
    llama.other_files("doc", head, (("a.py", "x = 1"),))
    path, body = llama.endpoint(GenerationRequest(head + "y = ", doc_id="doc"))
    assert path == "/completion"  # prefix-only: the chunk stays in the prompt as built
    fim = connect(RemoteSpec(kind="llama-server", url=UNREACHABLE, fim="qwen"))
    try:
        fim.other_files("doc", head, (("a.py", "x = 1"),))
        prompt = head + "<|fim_prefix|>y = <|fim_suffix|>\n<|fim_middle|>"
        path, body = fim.endpoint(GenerationRequest(prompt, doc_id="doc"))
        assert path == "/infill" and body["input_extra"] == [{"filename": "a.py", "text": "x = 1"}]
        assert body["input_prefix"] == "y = "
    finally:
        fim.close()


def test_stop_reasons_include_failure_and_every_backends_reasons_are_among_them() -> None:
    assert set(STOP_REASONS) == {
        "",
        "max_tokens",
        "eos",
        "stop_string",
        "callback",
        "cancelled",
        "error",
    }
    assert set(STOP_TYPES.values()) <= set(STOP_REASONS)
    assert set(FINISH.values()) <= set(STOP_REASONS)
    failed = GenerationResult("", stats=GenerationStats(stop_reason="error"))
    assert failed.failed and failed.stats.failed and not failed.cancelled
    for reason in STOP_REASONS:
        if reason != "error":
            assert not GenerationResult("", stats=GenerationStats(stop_reason=reason)).failed
    assert GenerationStats(stop_reason="eos").to_dict()["stop_reason"] == "eos"  # the wire's


def test_each_name_is_defined_once_in_the_contract() -> None:
    assert presets.METHODS is api.METHODS and presets.WEIGHT_FORMATS is api.WEIGHT_FORMATS
    assert presets.FORWARDS is api.FORWARDS
    assert forward.FORWARDS is api.FORWARDS and loading.FORWARDS is api.FORWARDS
    assert quant.WEIGHT_FORMATS is api.WEIGHT_FORMATS
    assert config.SPECULATION is api.SPECULATION
    assert set(api.SPECULATION) == {"auto", *api.METHODS}
    assert set(api.MODEL_METHODS) <= set(api.METHODS)
    assert set(api.FLOAT_FORMATS) <= set(api.WEIGHT_FORMATS)


def test_the_engine_lists_the_drafting_methods_from_the_contract(
    target, tokenizer, random_draft
) -> None:  # type: ignore[no-untyped-def]
    assert make_engine(target, tokenizer).methods == ["off", "ngram"]
    with_draft = make_engine(target, tokenizer, random_draft)
    assert with_draft.methods == list(api.METHODS)


def test_the_contract_imports_no_torch() -> None:
    import subprocess
    import sys

    code = "import sys, spec_lsp.engine.api; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_setting_becomes_the_draft_method_it_names_and_nothing_else() -> None:
    assert [as_method(m) for m in METHODS] == list(METHODS)
    with pytest.raises(ValueError, match="unknown drafting method 'auto'"):
        as_method("auto")  # a speculation setting, not a method: the caller maps it first
