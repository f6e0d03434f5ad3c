"""A hole of `bench repo` (`RepoHole`) and the bounds every language's miner keeps: the type
`repo_holes` (Python) and `repo_holes_js` (JavaScript, TypeScript) both make, apart from either
so that neither imports the other's module to get it. It knows nothing of trees or servers."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

MAX_LINES = 3  # a hole's statement spans at most this many lines
MIN_CHARS = 4  # and its hole at least this many characters but spaces
CUTS = ("name", "args")  # where a hole starts: at the imported name, or after its call's `(`
_CALLEE = re.compile(r"[A-Za-z_$][\w$]*(?:\s*\.\s*[A-Za-z_$][\w$]*)*\s*\(")


@dataclass(frozen=True)
class RepoHole:
    """A hole in `path` of package `package`: characters `start`..`end` of the file's text are
    `expected`; `names` are the imported names it uses; `imports` the package files they come
    from, `file_imports` all the package files its file imports (paths relative to the
    package's root)."""

    package: str
    path: str
    start: int
    end: int
    expected: str
    names: tuple[str, ...]
    imports: tuple[str, ...]
    file_imports: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.package}/{self.path}:{self.start}"

    def document(self, text: str) -> str:
        """The file's `text` with the hole removed (the cursor at `start`)."""
        return text[: self.start] + text[self.end :]

    def filled(self, text: str, answer: str) -> str:
        """The file's `text` with `answer` written where the hole was."""
        return text[: self.start] + answer + text[self.end :]


def cut_hole(
    label: str,
    path: str,
    text: str,
    data: bytes,
    span: tuple[int, int],
    used: list[str],
    names: dict[str, str],
) -> RepoHole | None:
    """The hole of `text` (`data` its UTF-8 bytes, `span` a range of them: the first imported
    name's use to the statement's end) that uses the imported names `used`, in order (`names`:
    name -> the file it comes from); None under MIN_CHARS. Every language's miner cuts with it."""
    start = len(data[: span[0]].decode("utf-8", "surrogatepass"))
    end = start + len(data[span[0] : span[1]].decode("utf-8", "surrogatepass"))
    expected = text[start:end]
    if len(expected.replace(" ", "")) < MIN_CHARS:
        return None
    found = tuple(dict.fromkeys(used))
    imports = tuple(dict.fromkeys(names[n] for n in found))
    every = tuple(sorted(set(names.values())))
    return RepoHole(label, path, start, end, expected, found, imports, every)


def args_cut(hole: RepoHole) -> RepoHole | None:
    """The hole's `args` cut: when its text begins with a call of the imported name (`name(`,
    `name.attr(`), the same hole with the callee and its `(` typed, the arguments and the
    statement's rest to write, as a person who typed the name and asked then; None when the
    text begins otherwise or too little is left (MIN_CHARS)."""
    found = _CALLEE.match(hole.expected)
    if found is None:
        return None
    rest = hole.expected[found.end() :]
    if len(rest.replace(" ", "")) < MIN_CHARS:
        return None
    return replace(hole, start=hole.start + found.end(), expected=rest)
