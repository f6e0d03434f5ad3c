"""spec_lsp/config.py: the settings table is what validation, the wire and Options come from."""

from __future__ import annotations

import dataclasses

import pytest

from spec_lsp.config import SETTINGS, Options, merge, to_wire


def test_options_has_one_field_per_setting_with_the_settings_default() -> None:
    fields = [(f.name, f.default) for f in dataclasses.fields(Options)]
    assert fields == [(s.name, s.default) for s in SETTINGS]


def test_every_setting_rejects_a_value_of_another_type_and_keeps_its_default() -> None:
    wrong = {"boolean": "yes", "integer": 1.5, "number": "hot", "string": 3, "array": "*"}
    for s in SETTINGS:
        if not s.client:
            continue
        merged, warnings = merge(Options(), {s.key: wrong[s.json_type]})
        assert getattr(merged, s.name) == s.default and len(warnings) == 1, s.key


@pytest.mark.parametrize(
    ("key", "value"),
    [("maxTokens", 0), ("maxTokens", 4097), ("partialMs", -1), ("temperature", 10.5)],
)
def test_numbers_outside_their_range_are_refused(key: str, value: float) -> None:
    merged, warnings = merge(Options(), {key: value})
    assert merged == Options() and len(warnings) == 1


def test_a_client_cannot_set_trust_remote_code_and_is_told_the_flag() -> None:
    merged, warnings = merge(Options(), {"trustRemoteCode": True})
    assert merged.trust_remote_code is False
    assert len(warnings) == 1 and "--trust-remote-code" in warnings[0]
    assert "trustRemoteCode" not in to_wire(Options(trust_remote_code=True))


def test_language_entries_with_a_bang_leave_that_language_out() -> None:
    options = Options(enabled_languages=("*", "!markdown"))
    assert options.language_enabled("python") and not options.language_enabled("markdown")
    assert not Options(enabled_languages=("python",)).language_enabled("rust")


@pytest.mark.parametrize(
    ("path", "excluded"),
    [
        ("/w/README.md", True),
        ("/w/docs/guide.md", True),
        ("/w/secrets/token.py", True),
        ("/w/app.py", False),
        ("/w/md/app.py", False),
    ],
)
def test_exclude_matches_file_names_and_whole_paths(path: str, excluded: bool) -> None:
    options = Options(exclude=("*.md", "*/secrets/*"))
    assert options.excluded(path) is excluded
