"""Property tests of trimming: it never raises, never hands the suffix back, adds parse errors only
when no shorter boundary would add none, and stopping early gives the same suggestion."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tree_sitter import Node

from spec_lsp.syntax import SyntaxService, cutter_for, spec_for
from spec_lsp.syntax.languages import new_parser
from spec_lsp.syntax.units import Mode

CORPUS: dict[str, str] = {
    "python": '''import json
from pathlib import Path


class Store:
    """Keeps items on disk."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.items: dict[str, int] = {}

    def load(self, name: str) -> int:
        path = self.root / f"{name}.json"
        if not path.exists():
            return 0
        with open(path) as f:
            data = json.load(f)
        return int(data.get("count", 0))


def main(args: list[str]) -> None:
    store = Store(Path(args[0]))
    for name in args[1:]:
        print(name, store.load(name))
''',
    "javascript": """import { readFile } from 'fs/promises';

export async function load(path) {
  const text = await readFile(path, 'utf8');
  const data = JSON.parse(text);
  return data.items.map((item) => ({ id: item.id, name: `#${item.name}` }));
}

const handlers = {
  start(ctx) {
    ctx.running = true;
  },
  stop: (ctx) => {
    ctx.running = false;
  },
};
""",
    "rust": """use std::collections::HashMap;

pub enum Cmd { Start, Stop }

fn code(c: &Cmd) -> i32 {
    match c {
        Cmd::Start => 1,
        Cmd::Stop => 2,
    }
}

fn count<'a>(words: &[&'a str]) -> HashMap<&'a str, usize> {
    let mut map = HashMap::new();
    for w in words {
        *map.entry(*w).or_insert(0) += 1;
    }
    map
}
""",
    "go": """package main

import "fmt"

func sum(xs []int) int {
\ttotal := 0
\tfor _, x := range xs {
\t\ttotal += x
\t}
\treturn total
}

func main() {
\tfmt.Println(sum([]int{1, 2, 3}))
}
""",
}

LANGUAGES = sorted(CORPUS)
SETTINGS = settings(
    max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
# Text without brackets, quotes or comment markers: "new code" that cannot close anything.
PLAIN_CODE = st.lists(
    st.sampled_from(list("abcxyz_019 =+-*.,<>!\t") + ["foo", "return ", "\n", "    "]),
    max_size=20,
).map("".join)


def _errors(language: str, text: str) -> int:
    parser = new_parser(spec_for(language))
    assert parser is not None
    root = parser.parse(text.encode("utf-8", "surrogatepass")).root_node
    count, stack = 0, [root]
    while stack:
        node: Node = stack.pop()
        count += int(node.is_error or node.is_missing)
        stack.extend(node.children)
    return count


@st.composite
def cursor_in_corpus(draw: st.DrawFn, only_before_closers: bool = False) -> tuple[str, str, str]:
    language = draw(st.sampled_from(LANGUAGES))
    text = CORPUS[language]
    positions = [
        i
        for i in range(len(text) + 1)
        if not only_before_closers or all(ch in ")]}\"'`;, \t" for ch in text[i:].split("\n", 1)[0])
    ]
    at = draw(st.sampled_from(positions))
    return language, text[:at], text[at:]


@SETTINGS
@given(
    language=st.sampled_from(LANGUAGES + ["typescriptreact", "java", "yaml", "haskell", "nope"]),
    prefix=st.text(max_size=80),
    suffix=st.text(max_size=80),
    completion=st.text(max_size=80),
    mode=st.sampled_from([None, "none", "single", "multi"]),
)
def test_trimming_arbitrary_text_never_raises(
    language: str, prefix: str, suffix: str, completion: str, mode: Mode | None
) -> None:
    cutter = cutter_for(language, prefix, suffix, mode=mode)
    result = cutter.trim(completion)
    assert result is None or completion.startswith(result)
    assert result is None or result.strip()
    assert cutter.mode in ("none", "single", "multi")
    for end in range(0, len(completion) + 1, 7):
        keep = cutter.stop(completion[:end])
        assert keep is None or 0 <= keep <= end


@SETTINGS
@given(where=cursor_in_corpus(only_before_closers=True), new_code=PLAIN_CODE)
def test_trimmed_suggestion_never_repeats_the_suffix(
    where: tuple[str, str, str], new_code: str
) -> None:
    language, prefix, suffix = where
    result = cutter_for(language, prefix, suffix).trim(new_code + suffix)
    if result is None or not suffix.strip():
        return
    # The model wrote new code, then what already follows the cursor: only new code is shown.
    assert len(result) <= len(new_code), (result, new_code)


@SETTINGS
@given(where=cursor_in_corpus(), piece=st.data())
def test_parse_errors_are_added_only_when_no_shorter_line_boundary_avoids_them(
    where: tuple[str, str, str], piece: st.DataObject
) -> None:
    language, prefix, suffix = where
    source = CORPUS[language]
    start = piece.draw(st.integers(0, len(source)))
    completion = source[start : start + piece.draw(st.integers(1, 120))]  # real code, misplaced
    result = cutter_for(language, prefix, suffix).trim(completion)
    if result is None:
        return
    baseline = _errors(language, prefix + suffix)
    if _errors(language, prefix + result + suffix) <= baseline:
        return
    for end in (i for i, ch in enumerate(result) if ch == "\n"):
        shorter = result[:end].rstrip()
        if shorter.strip():
            assert _errors(language, prefix + shorter + suffix) > baseline, shorter


@settings(max_examples=30, deadline=None, database=None)
@given(
    edits=st.lists(
        st.tuples(st.integers(0, 400), st.integers(0, 6), st.text(max_size=6)), max_size=25
    )
)
def test_service_edits_keep_text_and_tree_in_step(edits: list[tuple[int, int, str]]) -> None:
    svc = SyntaxService()
    text = CORPUS["python"]
    svc.open("file:///p.py", "python", text)
    for at, length, new in edits:
        at = min(at, len(text))
        end = min(len(text), at + length)
        svc.apply_edit("file:///p.py", _pos(text, at), _pos(text, end), new)
        text = text[:at] + new + text[end:]
    assert svc.text("file:///p.py") == text
    tree = svc.tree("file:///p.py")
    parser = new_parser(spec_for("python"))
    assert parser is not None
    fresh = parser.parse(text.encode("utf-8", "surrogatepass"))
    assert str(tree.root_node) == str(fresh.root_node)  # type: ignore[attr-defined]


def _pos(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    return before.count("\n"), offset - (before.rfind("\n") + 1)


@SETTINGS
@given(where=cursor_in_corpus(), piece=st.data())
def test_stopping_early_gives_the_same_suggestion_as_generating_on(
    where: tuple[str, str, str], piece: st.DataObject
) -> None:
    language, prefix, suffix = where
    source = CORPUS[language]
    start = piece.draw(st.integers(0, len(source)))
    completion = source[start : start + piece.draw(st.integers(1, 200))]
    cutter = cutter_for(language, prefix, suffix)
    step = piece.draw(st.integers(1, 5))  # characters per decode step, like tokens
    for end in range(step, len(completion) + step, step):
        keep = cutter.stop(completion[:end])
        if keep is not None:
            stopped = completion[:end][:keep]
            assert cutter.trim(stopped) == cutter.trim(completion)
            return
