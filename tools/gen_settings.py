"""Writes the server's option list, from spec_lsp/config.py's SETTINGS, everywhere it is listed:

- editors/vscode/package.json: `contributes.configuration` (one `specLsp.<key>` per option a
  client may set; the extension's own settings, such as `specLsp.serverPath`, are kept as they are)
- editors/vscode/src/config.ts: `SERVER_KEYS`, the keys the extension sends
- editors/vscode/README.md and docs/protocol.md: the tables between `<!-- settings ... -->` markers
- editors/nvim/doc/spec_lsp.txt: the key list under `init_options`

    python tools/gen_settings.py           # rewrite the files
    python tools/gen_settings.py --check   # exit 1 and name the files that drifted

tests/test_settings_drift.py runs the check, so an option added to config.py without running this
fails the tests. It knows nothing about what the options do beyond their one-line docs.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spec_lsp.config import SETTINGS, Setting  # noqa: E402

PACKAGE_JSON = ROOT / "editors" / "vscode" / "package.json"
CONFIG_TS = ROOT / "editors" / "vscode" / "src" / "config.ts"
VSCODE_README = ROOT / "editors" / "vscode" / "README.md"
PROTOCOL_MD = ROOT / "docs" / "protocol.md"
NVIM_HELP = ROOT / "editors" / "nvim" / "doc" / "spec_lsp.txt"

BEGIN = "<!-- settings: written by tools/gen_settings.py from spec_lsp/config.py -->"
END = "<!-- end of settings -->"
TS_BEGIN = "// settings: written by tools/gen_settings.py from spec_lsp/config.py"
TS_END = "// end of settings"
HELP_HEAD = "    The keys (written by tools/gen_settings.py from spec_lsp/config.py):"

CLIENT = [s for s in SETTINGS if s.client]
FLAGS = [s for s in SETTINGS if not s.client]


class Drift(Exception):
    """A file lacks the markers the generator writes between."""


def between(text: str, begin: str, end: str, body: str, where: Path) -> str:
    """`text` with what lies between the lines `begin` and `end` replaced by `body`."""
    start, stop = text.find(begin + "\n"), text.find("\n" + end)
    if start < 0 or stop < start:
        raise Drift(f"{where}: the markers {begin!r} ... {end!r} are missing")
    return text[: start + len(begin) + 1] + body + text[stop:]


def cell(text: str) -> str:
    return text.replace("|", "\\|")


# --- VS Code -------------------------------------------------------------------------------------


def vscode_property(s: Setting) -> dict[str, Any]:
    prop: dict[str, Any] = {"type": s.json_type}
    if s.json_type == "array":
        prop["items"] = {"type": "string"}
    if s.choices:
        prop["enum"] = list(s.choices)
    if s.minimum is not None:
        prop["minimum"] = s.minimum
    if s.maximum is not None:
        prop["maximum"] = s.maximum
    prop["default"] = list(s.default) if isinstance(s.default, tuple) else s.default
    prop["markdownDescription"] = s.doc[0].upper() + s.doc[1:] + "."
    return prop


def render_package_json(text: str) -> str:
    manifest = json.loads(text)
    props: dict[str, Any] = manifest["contributes"]["configuration"]["properties"]
    server_keys = {f"specLsp.{s.key}" for s in SETTINGS}
    own = {k: v for k, v in props.items() if k not in server_keys}
    # the server's options after the server command settings, the extension's own after them
    first = {k: own.pop(k) for k in ("specLsp.serverPath", "specLsp.serverArgs") if k in own}
    generated = {f"specLsp.{s.key}": vscode_property(s) for s in CLIENT}
    manifest["contributes"]["configuration"]["properties"] = first | generated | own
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def render_config_ts(text: str) -> str:
    keys = "".join(f'  "{s.key}",\n' for s in CLIENT)
    body = f"export const SERVER_KEYS = [\n{keys}] as const;"
    return between(text, TS_BEGIN, TS_END, body, CONFIG_TS)


def render_vscode_readme(text: str) -> str:
    rows = ["| setting | default | meaning |", "| --- | --- | --- |"]
    rows += [f"| `specLsp.{s.key}` | `{s.default_text()}` | {cell(s.doc)} |" for s in CLIENT]
    return between(text, BEGIN, END, "\n".join(rows), VSCODE_README)


# --- docs/protocol.md ----------------------------------------------------------------------------


def render_protocol(text: str) -> str:
    rows = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    rows += [
        f"| `{s.key}` | {cell(s.type_text())} | `{s.default_text()}` | {cell(s.doc)} |"
        for s in CLIENT
    ]
    for s in FLAGS:
        rows.append(
            f"\n`{s.key}` ({s.type_text()}, default `{s.default_text()}`): {s.doc}. Set only by "
            f"`spec-lsp serve {s.flag}`; a client that sends it gets a Warning and no change."
        )
    return between(text, BEGIN, END, "\n".join(rows), PROTOCOL_MD)


# --- Neovim help ---------------------------------------------------------------------------------


def render_nvim_help(text: str) -> str:
    start = text.find(HELP_HEAD + "\n")
    if start < 0:
        raise Drift(f"{NVIM_HELP}: the line {HELP_HEAD.strip()!r} is missing")
    body_start = start + len(HELP_HEAD) + 1
    stop = text.find("\n\n", body_start)
    lines: list[str] = []
    for s in CLIENT:
        lines.append(f"      `{s.key}` ({s.type_text()}, default `{s.default_text()}`)")
        lines += textwrap.wrap(
            s.doc + ".", width=78, initial_indent=" " * 10, subsequent_indent=" " * 10
        )
    return text[:body_start] + "\n".join(lines) + text[stop:]


TARGETS: dict[Path, Callable[[str], str]] = {
    PACKAGE_JSON: render_package_json,
    CONFIG_TS: render_config_ts,
    VSCODE_README: render_vscode_readme,
    PROTOCOL_MD: render_protocol,
    NVIM_HELP: render_nvim_help,
}


def drifted() -> list[str]:
    """The files whose option lists differ from SETTINGS (or lack their markers), with why."""
    out = []
    for path, render in TARGETS.items():
        text = path.read_text(encoding="utf-8")
        try:
            if render(text) != text:
                out.append(f"{path.relative_to(ROOT)}: differs from spec_lsp/config.py")
        except Drift as err:
            out.append(str(err))
    return out


def bare(default: str) -> str:
    """A default as a table writes it, without backticks or quotes: `"coder"` and coder agree."""
    return default.replace("`", "").replace('"', "").strip()


def readme_table_drift(readme: str) -> list[str] | None:
    """README.md's configuration table (rows `| \\`key\\` | default | ... |`) against SETTINGS:
    what differs, or None when the README has no such table."""
    rows = re.findall(r"^\|\s*`(\w+)`\s*\|\s*([^|]*?)\s*\|", readme, re.M)
    rows = [(k, d) for k, d in rows if k in {s.key for s in SETTINGS}]
    if not rows:
        return None
    problems = []
    listed = {k: bare(d) for k, d in rows}
    for s in CLIENT:
        if s.key not in listed:
            problems.append(f"README.md: `{s.key}` is missing from the configuration table")
        elif listed[s.key] != bare(s.default_text()):
            problems.append(
                f"README.md: `{s.key}` default {listed[s.key]!r}, config.py {s.default_text()!r}"
            )
    problems += [f"README.md: `{s.key}` is not a client setting" for s in FLAGS if s.key in listed]
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report drift")
    args = parser.parse_args()
    if args.check:
        problems = drifted()
        for line in problems:
            print(line, file=sys.stderr)
        return 1 if problems else 0
    for path, render in TARGETS.items():
        text = path.read_text(encoding="utf-8")
        new = render(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
