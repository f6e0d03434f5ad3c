"""Every command line argument says what it does (issue 42 item 9: `complete --help` had neither
help texts nor defaults): walks the whole parser of `spec-lsp`, every subcommand and sub-subcommand,
and reports the arguments without a help text, and those whose default goes unsaid."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from spec_lsp.cli import build_parser


def parsers(
    parser: argparse.ArgumentParser, path: str = "spec-lsp"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, f"{path} {name}")


def arguments() -> Iterator[tuple[str, argparse.Action]]:
    for path, parser in parsers(build_parser()):
        for action in parser._actions:
            if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                yield path, action


def name(action: argparse.Action) -> str:
    return "/".join(action.option_strings) or action.dest


def test_every_cli_argument_has_a_help_text() -> None:
    missing = [f"{path} {name(a)}" for path, a in arguments() if not (a.help or "").strip()]
    assert missing == [], "arguments without help=...: " + ", ".join(missing)


def test_every_option_with_a_value_shows_its_default() -> None:
    """`--help` shows what runs when an option is left out: its default, added by the parser's
    formatter (`cli.DefaultsFormatter`) or said in the help text's own words."""
    unsaid = []
    for path, parser in parsers(build_parser()):
        formatter = parser._get_formatter()
        for a in parser._actions:
            if (
                not a.option_strings
                or a.nargs == 0
                or a.default in (None, argparse.SUPPRESS, [], "")
            ):
                continue
            text = formatter._get_help_string(a) or ""  # type: ignore[attr-defined]
            if "%(default)" not in text and "default" not in text.lower():
                unsaid.append(f"{path} {name(a)} (default {a.default!r})")
    assert unsaid == [], "options whose help leaves the default out: " + ", ".join(unsaid)


def test_complete_help_shows_each_options_meaning_and_default() -> None:
    [complete] = [p for path, p in parsers(build_parser()) if path == "spec-lsp complete"]
    text = " ".join(complete.format_help().split())
    for said in ("(default: coder)", "(default: auto)", "(default: 64)", "0 is greedy"):
        assert said in text, text
