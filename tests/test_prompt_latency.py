"""The prompt sized to the model's measured prefill speed (`prompt.Budget.for_model`): a slow
model gets a prefix window such that a cold prompt prefills within about `COLD_PROMPT_S`; the
suffix keeps its share (FIM quality depends on it); a fast model, or one not measured, keeps the
context's budget."""

from spec_lsp.prompt import (
    CHARS_PER_TOKEN,
    COLD_PROMPT_S,
    MIN_PREFIX_TOKENS,
    Budget,
    PromptBuilder,
)


def test_unmeasured_and_fast_models_keep_the_context_budget() -> None:
    for layout in ("psm", "spm", "prefix"):
        plain = Budget.for_model(1536, 64, layout)  # type: ignore[arg-type]
        assert Budget.for_model(1536, 64, layout, None) == plain  # type: ignore[arg-type]
        assert Budget.for_model(1536, 64, layout, 10_000.0) == plain  # type: ignore[arg-type]


def test_the_suffix_keeps_its_share_whatever_the_speed() -> None:
    for layout in ("psm", "spm"):
        plain = Budget.for_model(1536, 64, layout)  # type: ignore[arg-type]
        for rate in (1.0, 68.0, 400.0):
            budget = Budget.for_model(1536, 64, layout, rate)  # type: ignore[arg-type]
            assert budget.suffix_chars == plain.suffix_chars


def test_a_slow_model_gets_a_prefix_window_it_prefills_in_the_cold_budget() -> None:
    rate = 68.0  # tokens a second: the 1.5B coder on a 2-core CPU
    budget = Budget.for_model(1536, 64, "psm", rate)
    window = (budget.prefix_chars + budget.suffix_chars) / CHARS_PER_TOKEN
    assert window <= rate * COLD_PROMPT_S + 1
    assert budget.prefix_chars < Budget.for_model(1536, 64, "psm").prefix_chars


def test_the_prefix_never_drops_under_its_floor() -> None:
    assert Budget.for_model(4096, 64, "prefix", 1.0).prefix_chars == int(
        MIN_PREFIX_TOKENS * CHARS_PER_TOKEN
    )
    psm = Budget.for_model(4096, 64, "psm", 1.0)
    assert psm.prefix_chars == int(MIN_PREFIX_TOKENS * CHARS_PER_TOKEN)
    assert psm.suffix_chars == Budget.for_model(4096, 64, "psm").suffix_chars


def test_a_slow_models_prompt_is_shorter_and_ends_at_the_cursor() -> None:
    lines = [f"value_{i} = compute({i}, {i + 1})  # line {i}" for i in range(400)]
    row, col = 300, 10
    slow = PromptBuilder("qwen", 1536, 64, 68.0).build("a", lines, row, col)
    plain = PromptBuilder("qwen", 1536, 64).build("a", lines, row, col)
    assert len(slow.text) < 0.7 * len(plain.text)
    assert slow.window_start > plain.window_start
    before, after = slow.text.split("<|fim_suffix|>")
    assert before.endswith(lines[row][:col])
    assert after.startswith(lines[row][col:])
    assert after == plain.text.split("<|fim_suffix|>")[1]
