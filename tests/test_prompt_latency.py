"""The prompt sized to the model's measured prefill speed (`prompt.Budget.for_model`): a slow
model gets a window it prefills within `COLD_PROMPT_S` and a PSM suffix it re-prefills within
`KEYSTROKE_REFILL_MS`; a fast one, or one not measured, keeps the context's budget."""

from spec_lsp.prompt import (
    CHARS_PER_TOKEN,
    COLD_PROMPT_S,
    KEYSTROKE_REFILL_MS,
    MIN_SUFFIX_TOKENS,
    MIN_WINDOW_TOKENS,
    Budget,
    PromptBuilder,
)


def test_unmeasured_and_fast_models_keep_the_context_budget() -> None:
    plain = Budget.for_model(1536, 64, "psm")
    assert Budget.for_model(1536, 64, "psm", None) == plain
    assert Budget.for_model(1536, 64, "spm", 10_000.0) == Budget.for_model(1536, 64, "spm")
    assert Budget.for_model(2048, 64, "prefix", 10_000.0) == Budget.for_model(2048, 64, "prefix")
    # A fast PSM model: the whole window fits, the suffix is what re-prefills in a keystroke.
    fast = Budget.for_model(1536, 64, "psm", 10_000.0)
    assert fast.prefix_chars == plain.prefix_chars and fast.suffix_chars == plain.suffix_chars


def test_a_slow_model_gets_a_window_it_prefills_in_the_cold_budget() -> None:
    rate = 68.0  # tokens a second: the 1.5B coder on a 2-core CPU
    budget = Budget.for_model(1536, 64, "psm", rate)
    window = (budget.prefix_chars + budget.suffix_chars) / CHARS_PER_TOKEN
    assert window <= rate * COLD_PROMPT_S + 1
    assert budget.suffix_chars == int(MIN_SUFFIX_TOKENS * CHARS_PER_TOKEN)  # 17 < the floor
    plain = Budget.for_model(1536, 64, "psm")
    assert budget.prefix_chars < plain.prefix_chars and budget.suffix_chars < plain.suffix_chars


def test_the_suffix_follows_the_keystroke_budget_between_its_floor_and_share() -> None:
    rate = 400.0
    budget = Budget.for_model(1536, 64, "psm", rate)
    assert budget.suffix_chars == int(int(rate * KEYSTROKE_REFILL_MS / 1000) * CHARS_PER_TOKEN)
    # SPM keeps its suffix before the prefix: typing never re-prefills it, no cap.
    assert Budget.for_model(1536, 64, "spm", rate).suffix_chars > budget.suffix_chars


def test_the_window_never_drops_under_its_floor() -> None:
    budget = Budget.for_model(4096, 64, "prefix", 1.0)
    assert budget.prefix_chars == int(MIN_WINDOW_TOKENS * CHARS_PER_TOKEN)


def test_a_slow_models_prompt_is_shorter_and_ends_at_the_cursor() -> None:
    lines = [f"value_{i} = compute({i}, {i + 1})  # line {i}" for i in range(400)]
    row, col = 300, 10
    slow = PromptBuilder("qwen", 1536, 64, 68.0).build("a", lines, row, col)
    plain = PromptBuilder("qwen", 1536, 64).build("a", lines, row, col)
    assert len(slow.text) < len(plain.text) / 2
    assert slow.window_start > plain.window_start
    before, after = slow.text.split("<|fim_suffix|>")
    assert before.endswith(lines[row][:col])
    assert after.startswith(lines[row][col:])
