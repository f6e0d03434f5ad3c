"""Unit properties of the server's pure parts: options, documents and encodings, prompts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spec_lsp.completion.syntax_port import Cut
from spec_lsp.config import Options, merge, settings_section, to_wire
from spec_lsp.documents import Document
from spec_lsp.positions import col_from_units, units_len
from spec_lsp.prompt import TEMPLATES, Prompt, PromptBuilder, unlead

# -- options ---------------------------------------------------------------------------------


def test_options_round_trip_through_camel_case_wire_names() -> None:
    options = Options(preset="tiny", max_tokens=12, enabled_languages=("python",), kv_reuse=False)
    merged, warnings = merge(Options(), to_wire(options))
    assert merged == options and warnings == []


def test_an_invalid_option_warns_once_and_uses_its_default() -> None:
    base = Options(max_tokens=10, temperature=0.5)
    merged, warnings = merge(base, {"maxTokens": -1, "temperature": "hot", "debounceMs": 20})
    assert merged.max_tokens == Options().max_tokens
    assert merged.temperature == Options().temperature
    assert merged.debounce_ms == 20
    assert len(warnings) == 2 and "maxTokens" in warnings[0]


def test_unknown_keys_are_ignored_and_booleans_are_not_ints() -> None:
    merged, warnings = merge(Options(), {"futureOption": 1, "maxTokens": True})
    assert merged.max_tokens == Options().max_tokens and len(warnings) == 1


def test_settings_are_found_nested_under_specLsp_or_directly() -> None:
    assert settings_section({"specLsp": {"enabled": False}}) == {"enabled": False}
    assert settings_section({"enabled": False}) == {"enabled": False}
    assert settings_section(None) is None


# -- documents and encodings -------------------------------------------------------------------

text_st = st.text(alphabet=st.sampled_from(list("ab \té日本😀🎉\n")), max_size=40)


@given(text_st, st.integers(0, 50))
def test_utf16_columns_match_python_encoding(line: str, units: int) -> None:
    line = line.replace("\n", "")
    col = col_from_units(line, units, "utf-16")
    assert units_len(line[:col], "utf-16") <= units
    if col < len(line):
        assert units_len(line[: col + 1], "utf-16") > units
    assert units_len(line, "utf-16") == len(line.encode("utf-16-le")) // 2
    assert units_len(line, "utf-8") == len(line.encode("utf-8"))


@given(text_st, st.data())
def test_incremental_edits_in_utf16_equal_editing_the_string(
    text: str, data: st.DataObject
) -> None:
    doc = Document.from_text("file:///t", "plaintext", 1, text)
    offsets = sorted(data.draw(st.lists(st.integers(0, len(text)), min_size=2, max_size=2)))
    new = data.draw(st.text(alphabet=st.sampled_from(list("x😀\n")), max_size=4))

    def lsp(offset: int) -> tuple[int, int]:
        before = text[:offset]
        line = before.count("\n")
        return line, units_len(before.split("\n")[-1], "utf-16")

    (l1, c1), (l2, c2) = lsp(offsets[0]), lsp(offsets[1])
    start, end = doc.clamp(l1, c1, "utf-16"), doc.clamp(l2, c2, "utf-16")
    doc.apply(start, end, new)
    assert doc.text == text[: offsets[0]] + new + text[offsets[1] :]


def test_a_position_past_the_last_line_is_out_of_range() -> None:
    doc = Document.from_text("file:///t", "python", 1, "a\nb")
    assert doc.position(5, 0, "utf-16") is None
    assert doc.position(1, 99, "utf-16") == (1, 1)


# -- prompts -----------------------------------------------------------------------------------


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
    assert short.text == "x = 1\ny = " and not short.context_used
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


def test_after_indentation_only_the_prefix_layout_leaves_the_last_blank_out_of_the_prompt() -> None:
    lines = ["def f(x):", "    "]
    plain = PromptBuilder("none", context_tokens=256, max_new_tokens=16).build("a", lines, 1, 4)
    assert (plain.text, plain.lead) == ("def f(x):\n   ", " ")
    tabs = PromptBuilder("none", 256, 16).build("b", ["if a:", "\t\t"], 1, 2)
    assert (tabs.text, tabs.lead) == ("if a:\n\t", "\t")
    fim = PromptBuilder("qwen", context_tokens=256, max_new_tokens=16).build("c", lines, 1, 4)
    assert fim.lead == "" and "def f(x):\n    <|fim_suffix|>" in fim.text


def test_blanks_after_code_on_the_line_or_at_column_0_are_kept_in_the_prompt() -> None:
    builder = PromptBuilder("none", context_tokens=256, max_new_tokens=16)
    assert builder.build("a", ["x = "], 0, 4) == Prompt("x = ", 0, False, "")
    assert builder.build("b", ["def f():", ""], 1, 0).lead == ""


def test_unlead_removes_the_typed_lead_or_says_the_completion_differs() -> None:
    assert unlead(" return x", " ") == "return x"
    assert unlead("", " ") == ""
    assert unlead("\nx", " ") is None
    assert unlead("abc", "") == "abc"


class FirstLine:
    """A cutter that keeps the first line, recording what its stop callback was shown."""

    mode = "single"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def stop(self, text: str) -> int | None:
        self.seen.append(text)
        return text.find("\n") if "\n" in text else None

    def trim(self, text: str, growing: bool = False) -> str | None:
        return text.split("\n", 1)[0] or None


def test_the_stop_callback_after_a_lead_sees_only_the_text_for_the_cursor() -> None:
    cutter = FirstLine()
    cut = Cut(cutter, " ")  # type: ignore[arg-type]
    assert cut.stop(" ") is None and cutter.seen == []  # only the lead so far
    assert cut.stop(" return x") is None and cutter.seen == ["return x"]
    assert cut.stop(" return x\n") == len(" return x")  # a length in the model's text
    assert cut.stop("\n") == 0  # does not begin with the lead: stop at once
    assert cut.trim(" return x\ny") == "return x" and cut.trim("\nx") is None
    assert Cut(cutter, "").stop("a\nb") == 1  # without a lead: the cutter's own answer


def test_a_suggestion_ends_before_a_line_that_marks_another_file_of_the_prompt() -> None:
    """With other files' chunks in the prompt, a model that writes a file marker has gone on to
    imitate the next file: what follows is not this file's code (seen with the bundled model)."""
    from spec_lsp.completion.neighbours import markers

    cutter = FirstLine()
    chunks = [("invoices.py", "def total(): ...")]
    marks = markers("none", "python", chunks, "file:///w/report.py")
    assert marks == ("\n# invoices.py", "\n# report.py")
    cut = Cut(cutter, "", marks)  # type: ignore[arg-type]
    text = 'currency(total))\n"""\n\n# report.py\n"""'
    assert cut.stop(text) == text.index("\n# report.py")
    assert cut.stop("# invoices.py\nx") == 0  # a marker line at the very start
    assert Cut(cutter, "").stop("x") is None and cut.stop("total(lines)") is None
    assert cut.trim("a(b)\n# report.py\nmore") == "a(b)"
    assert markers("qwen", "python", chunks, "file:///w/r.py") == ("<|file_sep|>", "<|repo_name|>")
    assert markers("none", "python", [], "file:///w/r.py") == ()
