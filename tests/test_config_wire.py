"""spec_lsp/config.py on the wire: options round-trip through camelCase, a bad or unknown value
warns and keeps the default, and the settings are found nested or not (the settings table itself:
tests/test_config.py)."""

from __future__ import annotations

from spec_lsp.config import Options, merge, settings_section, to_wire


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
