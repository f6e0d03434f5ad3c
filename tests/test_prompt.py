"""spec_lsp/prompt.py: FIM templates per family, a prefix window that is stable while typing and
fits the budget, the context line, and the indentation lead."""

from __future__ import annotations

from spec_lsp.prompt import CLOSED_STARTS, TEMPLATES, Prompt, PromptBuilder, unlead


def _lines(n: int) -> list[str]:
    return [f"value_{i} = compute({i})" for i in range(n)]


def test_every_family_ends_its_prompt_with_the_text_being_typed_or_the_fim_marker() -> None:
    for family, template in TEMPLATES.items():
        prompt = template.render("PREFIX", "SUFFIX")
        if template.layout in ("spm", "prefix"):
            assert prompt.endswith("PREFIX"), family
        else:
            assert prompt.index("PREFIX") < prompt.index("SUFFIX"), family


def test_the_prompt_before_the_cursor_line_is_stable_while_typing() -> None:
    builder = PromptBuilder("starcoder", context_tokens=256, max_new_tokens=32)
    lines = _lines(400) + [""]
    row = len(lines) - 1
    prompts = []
    for typed in ("d", "de", "def", "def f"):
        lines[row] = typed
        prompts.append(builder.build("doc", lines, row, len(typed), context="import os").text)
    head = prompts[0][: -len("d")]
    assert all(p.startswith(head) for p in prompts)


def test_the_prefix_window_fits_the_budget_and_starts_on_a_line() -> None:
    builder = PromptBuilder("none", context_tokens=128, max_new_tokens=16)
    lines = _lines(1000)
    prompt = builder.build("doc", lines, 999, 5)
    assert len(prompt.text) <= builder.budget.prefix_chars
    assert prompt.window_start > 0
    assert prompt.text.startswith(lines[prompt.window_start])


def test_context_is_added_only_when_the_window_does_not_start_at_the_top() -> None:
    builder = PromptBuilder("none", context_tokens=128, max_new_tokens=16)
    short = builder.build("a", ["x = 1", "y = "], 1, 4, context="import os")
    assert (short.text, short.lead) == ("x = 1\ny =", " ") and not short.context_used
    long = builder.build("b", _lines(1000), 999, 3, context="import os")
    assert long.context_used and long.text.startswith("import os\n")


def test_a_header_being_typed_inside_the_window_never_enters_the_context() -> None:
    builder = PromptBuilder("none", context_tokens=128, max_new_tokens=16)
    lines = _lines(1000)
    starts = set()
    for typed in ("def f", "def fo", "def foo(a", "def foo(a):"):
        doc = lines[:998] + [typed] + lines[999:]
        # The syntax layer names the enclosing def as context while its line is typed.
        prompt = builder.build("c", doc, 998, len(typed), context=f"import os\n{typed}")
        assert prompt.text.startswith("import os\n") and prompt.text.count(typed) == 1
        starts.add(prompt.text[: -len(typed)])
    assert len(starts) == 1  # everything before the typed text is the same at each keystroke


def test_after_indentation_only_a_prompt_ending_in_typed_text_leaves_the_last_blank_out() -> None:
    lines = ["def f(x):", "    "]
    plain = PromptBuilder("none", context_tokens=256, max_new_tokens=16).build("a", lines, 1, 4)
    assert (plain.text, plain.lead) == ("def f(x):\n   ", " ")
    tabs = PromptBuilder("none", 256, 16).build("b", ["if a:", "\t\t"], 1, 2)
    assert (tabs.text, tabs.lead) == ("if a:\n\t", "\t")
    fim = PromptBuilder("qwen", context_tokens=256, max_new_tokens=16).build("c", lines, 1, 4)
    # The PSM middle (the cursor's line typed so far) ends the prompt: same rule.
    assert (fim.text, fim.lead) == ("<|fim_prefix|>def f(x):\n<|fim_suffix|><|fim_middle|>   ", " ")
    at_start = PromptBuilder("qwen", 256, 16).build("d", ["def f(x):", ""], 1, 0)
    assert at_start.text == "<|fim_prefix|>def f(x):\n<|fim_suffix|><|fim_middle|>"


def test_one_space_typed_after_code_is_left_out_for_the_model_to_write() -> None:
    builder = PromptBuilder("none", context_tokens=256, max_new_tokens=16)
    assert builder.build("a", ["x = "], 0, 4) == Prompt("x =", 0, False, " ")
    fim = PromptBuilder("qwen", 256, 16).build("c", ["def f(x):", "    raise "], 1, 10)
    assert (fim.text, fim.lead) == (
        "<|fim_prefix|>def f(x):\n<|fim_suffix|><|fim_middle|>    raise",
        " ",
    )
    assert fim.middle == "    raise"


def test_two_blanks_after_code_a_tab_or_column_0_are_kept_in_the_prompt() -> None:
    builder = PromptBuilder("none", context_tokens=256, max_new_tokens=16)
    assert builder.build("a", ["x =  "], 0, 5) == Prompt("x =  ", 0, False, "")
    assert builder.build("t", ["x =\t"], 0, 4).lead == ""
    assert builder.build("b", ["def f():", ""], 1, 0).lead == ""


def test_a_prompt_ending_in_typed_code_may_be_healed_one_ending_in_a_blank_or_marker_not() -> None:
    psm = PromptBuilder("qwen", 256, 16)
    assert psm.build("a", ["def f(cache):", "    return _cache("], 1, 18).heal
    assert psm.build("b", ["x = self.ho"], 0, 11).heal
    assert not psm.build("c", ["def f(x):", "    raise "], 1, 10).heal  # a lead left out
    assert not psm.build("d", ["def f(x):", ""], 1, 0).heal  # ends in the middle marker
    assert not psm.build("e", ["x =  "], 0, 5).heal  # two blanks typed: kept, not a word
    plain = PromptBuilder("none", 256, 16)
    assert plain.build("f", ["total = len("], 0, 12).heal
    assert not plain.build("g", ["def f():", ""], 1, 0).heal
    spm_layouts = [name for name, t in TEMPLATES.items() if t.layout == "spm"]
    assert spm_layouts
    for name in spm_layouts:  # suffix first: the prompt ends in the typed prefix
        spm = PromptBuilder(name, 256, 16).build("h", ["total = len("], 0, 12)
        assert spm.text.endswith("total = len(") and spm.heal


def test_unlead_removes_the_typed_lead_or_says_the_completion_differs() -> None:
    assert unlead(" return x", " ") == "return x"
    assert unlead("", " ") == ""
    assert unlead("\nx", " ") is None
    assert unlead("abc", "") == "abc"


def _psm_head(text: str) -> str:
    return text[: text.index("<|fim_middle|>") + len("<|fim_middle|>")]


def test_psm_typing_changes_only_the_middle_after_the_anchor() -> None:
    """Typing on a line, a new line, more typing: the prompt up to the middle marker (prefix,
    suffix) is the same at every keystroke, and the middle is what was typed since the anchor."""
    builder = PromptBuilder("qwen", context_tokens=512, max_new_tokens=32)
    above, below = _lines(20), ["", "print(value_0)"]
    steps = [
        (["    x"], 0, 5),
        (["    x = 1"], 0, 9),
        (["    x = 1", ""], 1, 0),
        (["    x = 1", "    y"], 1, 5),
    ]
    heads, middles = set(), []
    for typed, line, col in steps:
        doc = above + typed + below
        prompt = builder.build("doc", doc, len(above) + line, col)
        heads.add(_psm_head(prompt.text))
        middles.append(prompt.middle)
    assert len(heads) == 1
    assert heads.pop().endswith(
        "value_19 = compute(19)\n<|fim_suffix|>\n\nprint(value_0)<|fim_middle|>"
    )
    assert middles == ["    x", "    x = 1", "    x = 1\n", "    x = 1\n    y"]


def test_psm_anchor_moves_when_the_suffix_changes_or_the_cursor_leaves_the_middle() -> None:
    builder = PromptBuilder("qwen", context_tokens=512, max_new_tokens=32)
    doc = _lines(10) + ["    total = f(", ""]
    first = builder.build("doc", doc, 10, 14)
    assert first.middle == "    total = f("
    # An editor's auto-inserted bracket after the cursor: a new suffix, a new anchor (its line).
    doc[10] = "    total = f(a)"
    closed = builder.build("doc", doc, 10, 15)
    assert closed.middle == "    total = f(a" and "<|fim_suffix|>)\n" in closed.text
    # The cursor moved up two lines: the anchor is that line's start.
    moved = builder.build("doc", doc, 8, 5)
    assert moved.middle == doc[8][:5]
    assert moved.text.startswith("<|fim_prefix|>" + "\n".join(doc[:8]) + "\n<|fim_suffix|>")


def test_a_prompt_for_a_text_the_document_may_never_have_leaves_the_anchor_alone() -> None:
    builder = PromptBuilder("qwen", context_tokens=512, max_new_tokens=32)
    doc = _lines(10) + ["    y = ", "z = 2"]
    typed = builder.build("doc", doc, 10, 8)
    elsewhere = _lines(5) + ["    q"]
    guess = builder.build("doc", elsewhere, 5, 5, remember=False)
    assert guess.middle == "    q"
    doc[10] = "    y = 3"
    after = builder.build("doc", doc, 10, 9)
    assert _psm_head(after.text) == _psm_head(typed.text) and after.middle == "    y = 3"


def test_a_reopened_document_starts_its_window_where_it_did_while_that_line_is_the_same() -> None:
    """Typing moved the cursor down from where the window's start was chosen: a start chosen
    afresh there would differ, and with it every token of the KV kept on disk at the close."""
    builder = PromptBuilder("qwen", context_tokens=512, max_new_tokens=32)
    lines = _lines(1000)
    first = builder.build("doc", lines, 600, 5)
    typed = builder.build("doc", lines, 610, 5)  # the cursor moved down: the start is kept
    assert typed.window_start == first.window_start
    fresh = PromptBuilder("qwen", context_tokens=512, max_new_tokens=32).build("doc", lines, 610, 5)
    assert fresh.window_start != first.window_start
    builder.forget("doc")  # closed
    builder.build("doc", lines, 900, 5, remember=False)  # a warm-up of another place: no use
    reopened = builder.build("doc", lines, 610, 5)
    assert reopened.window_start == first.window_start and reopened.text == typed.text
    builder.forget("doc")
    lines[first.window_start] = "changed = 1"  # its first line edited while it was closed
    assert builder.build("doc", lines, 610, 5).window_start == fresh.window_start
    builder.forget("doc")
    assert builder.build("doc", lines, 990, 5).window_start > 610  # out of reach: chosen afresh


def test_closed_documents_starts_are_bounded() -> None:
    builder = PromptBuilder("qwen", context_tokens=512, max_new_tokens=32)
    lines = _lines(1000)
    for i in range(CLOSED_STARTS + 10):
        builder.build(f"doc{i}", lines, 600, 5)
        builder.forget(f"doc{i}")
    assert len(builder._closed) == CLOSED_STARTS and "doc0" not in builder._closed


def test_a_restarted_builder_seeded_with_the_starts_opens_windows_where_they_were() -> None:
    lines = _lines(1000)
    first = PromptBuilder("qwen", context_tokens=512, max_new_tokens=32)
    chosen = first.build("doc", lines, 600, 5).window_start
    first.build("doc", lines, 610, 5)  # typing moved the cursor down: the start is kept
    first.build("gone", lines, 300, 5)
    first.forget("gone")
    starts = first.starts()
    assert set(starts) == {"doc", "gone"} and starts["doc"][0] == chosen
    restarted = PromptBuilder("qwen", context_tokens=512, max_new_tokens=32)
    restarted.seed(starts)
    assert restarted.build("doc", lines, 610, 5).window_start == chosen
    other = PromptBuilder("qwen", context_tokens=512, max_new_tokens=32)
    other.seed({"doc": (chosen, "0" * 16, "")})  # the line there is not the one it was
    assert other.build("doc", lines, 610, 5).window_start != chosen


def test_a_reopened_document_takes_its_anchor_again_so_its_first_prompt_is_its_last() -> None:
    """Typing ran over lines (Enter, an accepted block): the anchor stayed at the line where it
    began. Closed and reopened with the cursor where it was, a fresh anchor (the cursor's line)
    would re-render the prompt after it, and the KV kept on disk would not cover its end."""
    lines = _lines(40) + ["    x = 1", "    y = 2", "    z", "", "print(value_0)"]
    first = PromptBuilder("qwen", context_tokens=512, max_new_tokens=32)
    first.build("doc", lines[:40] + ["    x", ""] + lines[44:], 40, 5)
    last = first.build("doc", lines, 42, 5)
    assert last.middle == "    x = 1\n    y = 2\n    z"  # the anchor where typing began
    fresh = PromptBuilder("qwen", context_tokens=512, max_new_tokens=32).build("doc", lines, 42, 5)
    assert fresh.middle == "    z" and fresh.text != last.text
    first.forget("doc")
    assert first.build("doc", lines, 42, 5).text == last.text  # reopened
    restarted = PromptBuilder("qwen", context_tokens=512, max_new_tokens=32)
    restarted.seed(first.starts())
    assert restarted.build("doc", lines, 42, 5).text == last.text  # a restarted server
    restarted.forget("doc")
    moved = restarted.build("doc", lines, 41, 5)  # elsewhere: the suffix differs
    assert moved.middle == "    y = 2"[:5]
    edited = list(lines)
    edited[39] = "value_39 = 0"  # the text before the anchor changed while it was closed
    again = PromptBuilder("qwen", context_tokens=512, max_new_tokens=32)
    again.seed(first.starts())
    assert again.build("doc", edited, 42, 5).middle == "    z"


def _type_lines(builder: PromptBuilder, count: int) -> list[Prompt]:
    """Types `count` lines of code below 40 lines, a keystroke's prompt per word."""
    above, below, typed, prompts = _lines(40), ["", "print(value_0)"], [""], []
    for n in range(count):
        for word in (f"    item_{n}", " = value_", f"{n} + 1"):
            typed[-1] += word
            prompts.append(builder.build("doc", above + typed + below, 40 + n, len(typed[-1])))
        typed.append("")
    return prompts


def test_a_short_window_keeps_its_start_while_lines_are_typed_up_to_the_kept_size() -> None:
    """A builder of a few dozen tokens (a cold file's short window): within its own budget its
    start moves every line or two, so each move re-prefills it all; with the full window's
    size to keep to, typing only adds to its prompts' middle (the KV before it is reused)."""
    small = _type_lines(PromptBuilder("qwen", context_tokens=120, max_new_tokens=16), 12)
    assert len({p.window_start for p in small}) > 4
    full = PromptBuilder("qwen", context_tokens=2048, max_new_tokens=64)
    keep = full.budget.prefix_chars
    kept = _type_lines(PromptBuilder("qwen", 120, 16, keep_chars=keep), 12)
    assert {p.window_start for p in kept} == {kept[0].window_start}
    assert len({_psm_head(p.text) for p in kept}) == 1  # the anchor stays too
    assert len(kept[-1].text) > 2 * len(kept[0].text)
    # Past what it keeps to, a start is chosen within its own budget again.
    few = PromptBuilder("qwen", 120, 16, keep_chars=300)
    far = _type_lines(few, 12)
    assert len({p.window_start for p in far}) > 1
    assert max(len(p.text) for p in far) < len(kept[-1].text)
