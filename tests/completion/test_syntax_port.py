"""completion/syntax_port.py's `Cut`: the stop callback and trim past the prompt's lead, and the
end of a suggestion before a line that marks another file of the prompt."""

from __future__ import annotations

from collections.abc import Callable

from spec_lsp.completion.syntax_port import MAX_PARSED_CHARS, Cut, SyntaxPort

URI = "file:///w/huge.py"


class FirstLine:
    """A cutter that keeps the first line, recording what its stop callback was shown."""

    mode = "single"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def stop(self, text: str) -> int | None:
        self.seen.append(text)
        return text.find("\n") if "\n" in text else None

    def trim(self, text: str, growing: bool = False, capped: bool = False) -> str | None:
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


class CountingSyntax:
    """A syntax layer that records every call it gets (it parses nothing)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: self.calls.append(name)


def test_a_document_over_the_parse_limit_never_reaches_the_syntax_layer() -> None:
    """What keeps a huge document from stalling the server's other requests: it is never
    parsed (nor edited, nor asked about) in the syntax layer; its requests take the fallback
    rules. Over LSP: tests/fuzz/test_protocol_fuzz.py's 10 MB document."""
    syntax = CountingSyntax()
    port = SyntaxPort(syntax)  # type: ignore[arg-type]
    huge = "x = 1\n" * (MAX_PARSED_CHARS // 6 + 1)
    port.source = lambda uri: ("python", huge)
    port.open(URI, "python", huge)
    port.apply_edit(URI, (0, 0), (0, 0), "y")
    port.replace(URI, huge + "z")
    assert port.context(URI, 0, 0) == ""
    assert port.region(URI, 3, 5, 10) == (3, 5)
    assert port.cutter(URI, 0, 0, "x = ", "\n") is not None  # the fallback rules
    assert set(syntax.calls) == {"close"} and not port.is_parsed(URI)  # closes only
    port.open(URI, "python", "x = 1\n")  # back under the limit: parsed again
    assert syntax.calls[-1] == "open" and port.is_parsed(URI)
