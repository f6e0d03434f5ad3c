"""A prompt window's KV on disk (`kvdisk`, `kvfiles`): restored bitwise, only for its own model and
tokens, verified, bounded, private, and used by a restarted engine."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest
import torch

from spec_lsp.engine import cold, kvdisk, kvfiles
from spec_lsp.engine.api import GenerationRequest
from spec_lsp.engine.cache import ModelState
from spec_lsp.engine.engine import EngineOptions, SpecEngine
from spec_lsp.engine.forward import Forwards, kernel_family
from spec_lsp.engine.from_source import tiny_model
from spec_lsp.engine.lean import LeanDecoder
from spec_lsp.engine.sources.cache_root import cache_dir
from spec_lsp.engine.weights import native, quant
from tests.engine.conftest import CODE_PROMPTS

CHUNK = 128  # the engine's prefill chunk


def _model(seed: int = 3) -> torch.nn.Module:
    """A tiny model over GGUF blocks where the native kernels are built (the lean forward then
    keeps a float16 cache, as the coder pair does), else in float32."""
    model = tiny_model(2, seed, 256)
    if native.available():
        quant.apply_format(model, "int4")
    return model


def _decoder(seed: int = 3) -> LeanDecoder:
    return LeanDecoder(_model(seed))


def _ids(n: int, seed: int = 0, vocab: int = 256) -> list[int]:
    return torch.randint(0, vocab, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def _prefill(state: ModelState, ids: list[int]) -> torch.Tensor:
    """What the engine's `_prefill` runs: chunks of 128 after the cached tokens, then the rest;
    the last position's logits [1, V]."""
    for end in range(len(state) + CHUNK, len(ids), CHUNK):
        state.advance(ids[:end])
    return state.advance(ids).logits


def _saved(disk: kvdisk.KVDisk, identity: str, decoder: LeanDecoder, ids: list[int]) -> ModelState:
    state = ModelState(decoder)
    _prefill(state, ids)
    disk.save(identity, state)
    assert disk.flush(30)
    return state


def _file(folder: Path, identity: str, ids: list[int], block: int) -> Path:
    return folder / (kvdisk.chain(identity, ids)[block] + kvfiles.SUFFIX)


def test_a_restored_prefix_gives_bitwise_the_logits_and_cache_of_a_cold_prefill(
    tmp_path: Path,
) -> None:
    decoder, ids = _decoder(), _ids(600)
    disk = kvdisk.KVDisk(tmp_path / "kv", 2**30)
    cold = ModelState(decoder)
    want = _prefill(cold, ids)
    assert disk.save("model", cold) == 3  # the whole blocks (512 of 600 tokens) and the tail
    assert disk.flush(30)
    assert disk.save("model", cold) == 0  # all there already
    warm = ModelState(decoder)
    assert disk.restore("model", warm, ids) == 600
    assert warm.tokens == ids
    got = _prefill(warm, ids)
    assert torch.equal(got, want)
    for i in range(len(cold.cache.keys)):
        assert torch.equal(warm.cache.keys[i][:, :, :600], cold.cache.keys[i][:, :, :600])
        assert torch.equal(warm.cache.values[i][:, :600], cold.cache.values[i][:, :600])


def test_a_window_whose_end_differs_restores_its_longest_stored_prefix(tmp_path: Path) -> None:
    decoder, ids = _decoder(), _ids(600)
    disk = kvdisk.KVDisk(tmp_path / "kv", 2**30)
    _saved(disk, "model", decoder, ids)
    for tokens, restored in [
        (ids[:300] + _ids(400, seed=1), 256),
        (ids[:512] + _ids(100, seed=2), 512),
        (ids[:200] + _ids(400, seed=3), 0),
        (_ids(1, seed=4) + ids[1:], 0),
        (ids[:255], 0),  # not one whole block
        (ids, 600),  # the tail too
        (ids[:580] + _ids(50, seed=5), 580),  # what the tail shares
        (ids[:520] + _ids(50, seed=6), 512),  # too little of it shared to be read
    ]:
        state = ModelState(decoder)
        assert disk.restore("model", state, tokens) == restored
        assert state.tokens == tokens[:restored]


def test_the_tail_is_the_latest_states_and_a_corrupt_one_is_deleted(tmp_path: Path) -> None:
    decoder, ids = _decoder(), _ids(600)
    folder = tmp_path / "kv"
    disk = kvdisk.KVDisk(folder, 2**30)
    _saved(disk, "model", decoder, ids)
    other = ids[:540] + _ids(60, seed=7)  # the same blocks, another tail: it replaces the first
    _saved(disk, "model", decoder, other)
    tail = folder / (kvdisk.tail_name("model", kvdisk.chain("model", ids)) + kvfiles.SUFFIX)
    assert len(list(folder.glob("*" + kvfiles.SUFFIX))) == 3 and tail.exists()
    for tokens, restored in [(other, 600), (ids, 540)]:
        state = ModelState(decoder)
        assert disk.restore("model", state, tokens) == restored
    want = _prefill(ModelState(decoder), other)
    state = ModelState(decoder)
    disk.restore("model", state, other)
    assert torch.equal(_prefill(state, other), want)
    data = bytearray(tail.read_bytes())
    data[-3] ^= 0x10
    tail.write_bytes(bytes(data))
    assert disk.restore("model", ModelState(decoder), other) == 512  # the blocks only
    assert not tail.exists()
    short = _ids(100, seed=8)  # under one block: its tail alone
    _saved(disk, "model", decoder, short)
    assert disk.stored("model", short) == 100
    assert disk.restore("model", ModelState(decoder), short) == 100


def test_nothing_is_restored_for_another_identity_or_into_a_state_that_holds_kv(
    tmp_path: Path,
) -> None:
    decoder, ids = _decoder(), _ids(300)
    disk = kvdisk.KVDisk(tmp_path / "kv", 2**30)
    held = _saved(disk, "model", decoder, ids)
    assert disk.restore("another model", ModelState(decoder), ids) == 0
    assert disk.restore("model", held, ids) == 0  # not empty: left as it is
    assert len(held) == 300


def test_the_identity_names_the_model_its_weights_and_its_kernels() -> None:
    models = [_model(3), _model(3), _model(4)]
    decoders = [LeanDecoder(m) for m in models]
    same, again, other = (
        kvdisk.model_identity("tiny", m, d, "native-avx2")
        for m, d in zip(models, decoders, strict=True)
    )
    assert same == again and same != other
    assert kvdisk.model_identity("tinier", models[0], decoders[0], "native-avx2") != same
    assert kvdisk.model_identity("tiny", models[0], decoders[0], "torch") != same


@pytest.mark.parametrize("damage", ["flip a payload byte", "truncate", "garble the header"])
def test_a_corrupt_file_is_deleted_and_ignored(tmp_path: Path, damage: str) -> None:
    decoder, ids = _decoder(), _ids(600)
    folder = tmp_path / "kv"
    disk = kvdisk.KVDisk(folder, 2**30)
    _saved(disk, "model", decoder, ids)
    second = _file(folder, "model", ids, 1)
    data = bytearray(second.read_bytes())
    if damage == "flip a payload byte":
        data[-7] ^= 0x40
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data[len(kvfiles.MAGIC) + 6] = ord("{")
    second.write_bytes(bytes(data))
    state = ModelState(decoder)
    assert disk.restore("model", state, ids) == 256  # the first block only
    assert not second.exists()
    assert _file(folder, "model", ids, 0).exists()


def test_the_budget_evicts_the_least_recently_used_blocks_last_block_first(tmp_path: Path) -> None:
    decoder = _decoder()
    folder = tmp_path / "kv"
    disk = kvdisk.KVDisk(folder, 2**30, block=16)
    a, b = _ids(50, seed=1), _ids(50, seed=2)  # three blocks each
    _saved(disk, "model", decoder, a)
    size = max(p.stat().st_size for p in folder.glob("*.kv"))
    disk.files.budget = 4 * size + size // 2  # four files fit, five do not
    _saved(disk, "model", decoder, b)
    assert len(list(folder.glob("*.kv"))) == 4
    assert disk.restore("model", ModelState(decoder), b) == 48
    assert disk.restore("model", ModelState(decoder), a) == 16  # its earliest block is kept


def test_files_are_private_and_a_symlinked_file_is_not_followed(tmp_path: Path) -> None:
    decoder, ids = _decoder(), _ids(300)
    folder = tmp_path / "kv"
    disk = kvdisk.KVDisk(folder, 2**30)
    _saved(disk, "model", decoder, ids)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    block = _file(folder, "model", ids, 0)
    assert stat.S_IMODE(block.stat().st_mode) == 0o600
    elsewhere = tmp_path / "elsewhere.kv"
    block.rename(elsewhere)
    block.symlink_to(elsewhere)
    assert disk.restore("model", ModelState(decoder), ids) == 0
    assert not block.is_symlink() and elsewhere.exists()


def _refused(folder: Path, caplog: pytest.LogCaptureFixture) -> None:
    decoder, ids = _decoder(), _ids(300)
    with caplog.at_level(logging.WARNING):
        disk = kvdisk.KVDisk(folder, 2**30)
    assert not disk.files.usable
    assert "KV is not kept on disk" in caplog.text
    state = ModelState(decoder)
    _prefill(state, ids)
    assert disk.save("model", state) == 0
    assert disk.restore("model", ModelState(decoder), ids) == 0


def test_a_symlinked_folder_is_refused(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "kv").symlink_to(tmp_path / "real")
    _refused(tmp_path / "kv", caplog)
    assert not list((tmp_path / "real").iterdir())


def test_a_folder_others_may_write_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "kv").mkdir()
    (tmp_path / "kv").chmod(0o770)
    _refused(tmp_path / "kv", caplog)


def test_another_users_folder_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "kv").mkdir(mode=0o700)
    uid = os.getuid()
    monkeypatch.setattr(kvfiles.os, "getuid", lambda: uid + 1)  # the folder is not "ours"
    _refused(tmp_path / "kv", caplog)


def test_a_folder_others_may_read_is_made_private(tmp_path: Path) -> None:
    (tmp_path / "kv").mkdir()
    (tmp_path / "kv").chmod(0o755)
    assert kvdisk.KVDisk(tmp_path / "kv", 2**30).files.usable
    assert stat.S_IMODE((tmp_path / "kv").stat().st_mode) == 0o700


# -- the engine -----------------------------------------------------------------------------------

LONG_PROMPT = "\n".join(CODE_PROMPTS * 8)  # ~700 tokens


Pair = tuple[torch.nn.Module, torch.nn.Module, Forwards]  # target, draft, their lean forwards


@pytest.fixture(scope="module")
def pair() -> Pair:
    target, draft = tiny_model(2, 7, 49152), tiny_model(1, 99, 49152)
    if native.available():
        quant.apply_format(target, "int4")
        quant.apply_format(draft, "int4")
    return target, draft, Forwards(LeanDecoder(target), LeanDecoder(draft), kernel_family("cpu"))


def _engine(pair: Pair, tokenizer, folder: Path | None, **options) -> SpecEngine:  # type: ignore[no-untyped-def]
    disk = {"kv_disk_dir": str(folder)} if folder else {"kv_disk_mb": 0.0}
    opts = EngineOptions(method="draft", draft_min_confidence=0.0, **disk, **options)
    target, draft, forwards = pair
    return SpecEngine(target, tokenizer, draft, opts, forwards=forwards)  # type: ignore[arg-type]


def _request(doc: str = "a.py", idle: bool = False) -> GenerationRequest:
    return GenerationRequest(prompt=LONG_PROMPT, doc_id=doc, max_new_tokens=12, idle=idle)


def test_a_restarted_engine_answers_the_same_from_restored_kv(
    pair: Pair,
    tokenizer,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    first = _engine(pair, tokenizer, tmp_path / "kv")
    before = first.generate(_request())
    first.forget("a.py")  # the file is closed
    assert first.docs.tier is not None and first.docs.tier.flush(30)  # type: ignore[attr-defined]
    restarted = _engine(pair, tokenizer, tmp_path / "kv")
    after = restarted.generate(_request())
    cold = _engine(pair, tokenizer, None).generate(_request())
    assert after.token_ids == before.token_ids == cold.token_ids
    assert after.text == before.text and len(after.token_ids) == 12
    prompt = before.stats.prompt_tokens
    assert before.stats.reused_tokens == 0 and cold.stats.reused_tokens == 0
    # The whole prompt came back (its tail too); its last token runs again for its logits.
    assert after.stats.restored_tokens == prompt >= 512
    assert after.stats.reused_tokens == prompt - 1 and after.stats.prefilled_tokens == 1
    state = restarted.docs.get("a.py")
    assert state is not None and isinstance(state.draft, ModelState)
    assert len(state.draft) >= after.stats.reused_tokens  # the draft model's KV came back too


def test_an_idle_request_that_filled_a_cold_window_saves_it_and_others_do_not(
    pair: Pair,
    tokenizer,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    folder = tmp_path / "kv"
    engine = _engine(pair, tokenizer, folder)
    engine.generate(_request("a.py"))
    assert engine.docs.tier.flush(30) and not list(folder.glob("*.kv"))  # type: ignore[union-attr]
    engine.generate(_request("b.py", idle=True))
    assert engine.docs.tier.flush(30) and list(folder.glob("*.kv"))  # type: ignore[union-attr]


def test_a_document_the_lru_drops_is_saved(
    pair: Pair,
    tokenizer,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    folder = tmp_path / "kv"
    engine = _engine(pair, tokenizer, folder, max_docs=1)
    engine.generate(_request("a.py"))
    assert engine.docs.tier.flush(30) and not list(folder.glob("*.kv"))  # type: ignore[union-attr]
    engine.generate(_request("b.py"))  # the LRU holds one document: a.py goes
    assert engine.docs.tier.flush(30)  # type: ignore[union-attr]
    identity = engine.docs.tier.identities[pair[2].target]  # type: ignore[union-attr]
    names = kvdisk.chain(identity, engine.encode(LONG_PROMPT))
    assert len(names) >= 2
    assert all((folder / (name + kvfiles.SUFFIX)).exists() for name in names)


def test_off_in_the_test_suite_and_without_the_lean_forward(
    tokenizer,
    target,  # type: ignore[no-untyped-def]
) -> None:
    assert os.environ.get("SPEC_LSP_KV_DISK") == "off"
    assert kvdisk.folder(EngineOptions()) is None
    assert kvdisk.folder(EngineOptions(kv_disk_dir="/somewhere", kv_disk_mb=0)) is None
    plain = SpecEngine(target, tokenizer, None, EngineOptions(kv_disk_dir="/nonexistent/kv"))
    assert plain.docs.tier is None  # transformers' forward: its cache is not stored


def test_the_end_of_the_server_keeps_every_document_but_a_short_window(
    pair: Pair,
    tokenizer,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    folder = tmp_path / "kv"
    engine = _engine(pair, tokenizer, folder)
    other = "\n".join(reversed(CODE_PROMPTS)) * 8
    engine.generate(_request("a.py"))  # a request: nothing saved yet
    engine.generate(
        GenerationRequest(prompt=other, doc_id=cold.short_key("b.py"), max_new_tokens=4)
    )
    assert engine.docs.tier is not None and engine.docs.tier.flush(30)  # type: ignore[attr-defined]
    assert not list(folder.glob("*" + kvfiles.SUFFIX))
    assert engine.persist(30)
    identity = engine.docs.tier.identities[pair[2].target]  # type: ignore[attr-defined]
    kept = kvdisk.chain(identity, engine.encode(LONG_PROMPT))
    stand_in = kvdisk.chain(identity, engine.encode(other))
    assert len(kept) >= 2 and len(stand_in) >= 2
    assert all((folder / (name + kvfiles.SUFFIX)).exists() for name in kept)
    assert not any((folder / (name + kvfiles.SUFFIX)).exists() for name in stand_in)
    restarted = _engine(pair, tokenizer, folder)
    again = restarted.generate(_request("a.py"))
    assert again.stats.restored_tokens == again.stats.prompt_tokens > len(kept) * kvdisk.BLOCK
    assert again.stats.reused_tokens == again.stats.prompt_tokens - 1
    assert _engine(pair, tokenizer, None).persist(1)  # nothing to keep: done at once


def test_the_environment_names_the_folder_or_turns_it_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SPEC_LSP_KV_DISK", str(tmp_path / "kv"))
    assert kvdisk.folder(EngineOptions()) == tmp_path / "kv"
    assert kvdisk.folder(EngineOptions(kv_disk_dir="/else")) == Path("/else")  # the option first
    monkeypatch.setenv("SPEC_LSP_KV_DISK", "on")
    assert kvdisk.folder(EngineOptions()) == cache_dir() / "kv"
    monkeypatch.setenv("SPEC_LSP_KV_DISK", "off")
    assert kvdisk.folder(EngineOptions()) is None


def test_a_document_whose_kv_holds_another_window_takes_the_stored_longer_prefix(
    pair: Pair,
    tokenizer,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """A restarted server warms a reopened file's top first; the first request further down
    then finds its own window on disk, though the document holds KV (the top's) already."""
    folder = tmp_path / "kv"
    first = _engine(pair, tokenizer, folder)
    first.generate(_request())
    assert first.persist(30)
    restarted = _engine(pair, tokenizer, folder)
    top = LONG_PROMPT[:40] + "\n".join(reversed(CODE_PROMPTS)) * 8  # shares its first tokens
    warm = restarted.generate(GenerationRequest(prompt=top, doc_id="a.py", max_new_tokens=1))
    assert warm.stats.reused_tokens == 0  # nothing of it on disk
    again = restarted.generate(_request())
    stored = len(restarted.encode(LONG_PROMPT))  # every token, the tail's too
    assert again.stats.reused_tokens == stored - 1 and stored >= 512
    cold_answer = _engine(pair, tokenizer, None).generate(_request())
    assert again.token_ids == cold_answer.token_ids
    held = restarted.docs.get("a.py")
    assert held is not None and len(held.target) > stored
    assert restarted.generate(_request()).stats.restored_tokens == 0  # warm now: no lookup
