"""`spec-lsp bench next-edit`'s cases, mined from a git repository's history.

A positive case comes from a commit that changes a source file in two or more small line hunks
(zero context, difflib over the lines): the parent's text is opened, hunks 0..i-1 are the edit
history (applied one at a time, top to bottom, each as an offset edit in the text of its moment),
the cursor rests where hunk i-1's new text ends (for whole new lines: the end of the last), and
the answer is hunk i, when it starts within `NEAR_LINES` lines of the cursor. Each hunk's edit is
trimmed to the characters that differ, as a person would type it (`width` -> `w` deletes
`idth`). A negative case: a file of a commit
with all its (small) hunks applied as history, the cursor at the end of a non-blank line at least
`FAR_LINES` lines from every hunk; the commit changed nothing there, so no edit is expected.

The choice is deterministic: commits newest first (`--no-merges`), a pool of candidates, then a
seeded sample kept in history order; identical cases count once. Files: those with a source
extension (`LANGUAGES`), at most `MAX_LINES` lines and `MAX_BYTES` bytes, UTF-8 without NUL or CR
bytes, changed in place (no adds, deletes or renames); the root commit has no parent and no case.

This module owns the mining and the cases' text arithmetic; it knows nothing of LSP, servers or
models. Git runs read-only (`rev-list`, `diff-tree`, `cat-file`) with `cwd` set to the repository.
"""

from __future__ import annotations

import difflib
import hashlib
import random
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from spec_lsp.replay.document import Edit, diff_edit

LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".ts": "typescript",
    ".tsx": "typescriptreact",
    ".js": "javascript",
    ".mjs": "javascript",
    ".jsx": "javascriptreact",
    ".lua": "lua",
    ".go": "go",
    ".rs": "rust",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".java": "java",
    ".kt": "kotlin",
    ".rb": "ruby",
    ".sh": "shellscript",
    ".cs": "csharp",
    ".swift": "swift",
    ".php": "php",
}
MAX_LINES = 2000
MAX_BYTES = 200_000
MAX_HUNK_LINES = 8  # changed lines of a hunk, on either side
NEAR_LINES = 20  # a positive's next hunk starts at most this many lines from the cursor
FAR_LINES = 40  # a negative's cursor is at least this many lines from every hunk
POOL = 5  # candidates gathered per case wanted before the seeded sample
MAX_COMMITS = 5000
REGULAR = ("100644", "100755")  # file modes of regular files (not links or submodules)


class MiningError(RuntimeError):
    """The path is not in a git repository, or git failed."""


@dataclass(frozen=True)
class LineHunk:
    """Old lines [old_start, old_end) of the parent became new lines [new_start, new_end)."""

    old_start: int
    old_end: int
    new_start: int  # also the hunk's line once every earlier hunk is applied
    new_end: int


@dataclass(frozen=True)
class Case:
    """One question: open `text`, apply `history` in order, ask at `cursor` (a str offset in the
    text after the history); `expected` (an edit of that text) or None: nothing to suggest."""

    id: str
    commit: str
    path: str
    language: str
    text: str
    history: tuple[Edit, ...]
    cursor: int
    expected: Edit | None

    @property
    def positive(self) -> bool:
        return self.expected is not None

    def key(self) -> str:
        parts = [self.text, repr(self.history), str(self.cursor), repr(self.expected)]
        return hashlib.sha1("\0".join(parts).encode()).hexdigest()


def apply(text: str, edit: Edit) -> str:
    return text[: edit.start] + edit.text + text[edit.start + edit.old_len :]


def after_history(case: Case) -> str:
    text = case.text
    for edit in case.history:
        text = apply(text, edit)
    return text


def line_hunks(old: list[str], new: list[str]) -> list[LineHunk]:
    """The changed stretches of two texts' lines (kept ends), zero context, top to bottom."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return [
        LineHunk(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
    ]


def hunk_edit(old: list[str], new: list[str], hunk: LineHunk) -> Edit:
    """The hunk as an offset edit of the text in which every earlier hunk is applied, trimmed to
    the characters that differ (what a person types: `width` -> `w` deletes `idth`)."""
    start = sum(len(line) for line in new[: hunk.new_start])
    before = "".join(old[hunk.old_start : hunk.old_end])
    minimal = diff_edit(before, "".join(new[hunk.new_start : hunk.new_end]))
    return Edit(start + minimal.start, minimal.old_len, minimal.text)


def _small(h: LineHunk) -> bool:
    return max(h.old_end - h.old_start, h.new_end - h.new_start) <= MAX_HUNK_LINES


def _cursor(edit: Edit, hunk: LineHunk) -> tuple[int, int]:
    """(offset, line) where the applied hunk's typed text ends (a typed line: before its end)."""
    end = edit.end_after - (1 if edit.text.endswith("\n") else 0)
    return end, max(hunk.new_start, hunk.new_end - 1)


def positives(commit: str, path: str, old: str, new: str) -> list[Case]:
    """Every positive case of one file's change, in hunk order (none with fewer than 2 hunks)."""
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    hunks = line_hunks(old_lines, new_lines)
    edits = [hunk_edit(old_lines, new_lines, h) for h in hunks]
    language = LANGUAGES[PurePosixPath(path).suffix]
    cases = []
    for i in range(1, len(hunks)):
        if not (_small(hunks[i - 1]) and _small(hunks[i])):
            break  # the history holds small hunks only
        cursor, line = _cursor(edits[i - 1], hunks[i - 1])
        if hunks[i].new_start - line > NEAR_LINES:
            continue
        case_id = f"{commit[:12]}:{path}:{i}"
        history = tuple(edits[:i])
        cases.append(Case(case_id, commit, path, language, old, history, cursor, edits[i]))
    return cases


def negative(commit: str, path: str, old: str, new: str, seed: int) -> Case | None:
    """All of the file's hunks as history, the cursor at the end of a non-blank line at least
    FAR_LINES from every hunk (a seeded choice); None when no such line or a hunk is large."""
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    hunks = line_hunks(old_lines, new_lines)
    if not hunks or not all(_small(h) for h in hunks):
        return None
    spans = [(h.new_start, max(h.new_end, h.new_start + 1)) for h in hunks]
    lines = [
        n
        for n, line in enumerate(new_lines)
        if line.strip() and all(n < a - FAR_LINES or n >= b - 1 + FAR_LINES for a, b in spans)
    ]
    if not lines:
        return None
    line = random.Random(f"{seed}:{commit}:{path}").choice(lines)
    cursor = sum(len(x) for x in new_lines[:line]) + len(new_lines[line].rstrip("\n"))
    history = tuple(hunk_edit(old_lines, new_lines, h) for h in hunks)
    language = LANGUAGES[PurePosixPath(path).suffix]
    return Case(f"{commit[:12]}:{path}:far", commit, path, language, old, history, cursor, None)


class _Git:
    """Read-only git in one repository: commits, a commit's changed files, blobs (one batch)."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._batch: subprocess.Popen[bytes] | None = None

    def run(self, *args: str) -> bytes:
        cmd = ["git", "--no-pager", *args]
        done = subprocess.run(cmd, cwd=self.repo, capture_output=True, check=False)
        if done.returncode != 0:
            raise MiningError(f"{' '.join(cmd)}: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout

    def commits(self, max_commits: int, rev: str = "HEAD") -> list[str]:
        if rev.startswith("-"):
            raise MiningError(f"{rev}: not a revision")
        out = self.run("rev-list", "--no-merges", f"--max-count={max_commits}", rev, "--")
        return out.decode().split()

    def modified(self, commit: str) -> Iterator[tuple[str, str, str]]:
        """(path, old blob, new blob) of the regular files the commit changed in place."""
        out = self.run("diff-tree", "-r", "-z", "--no-commit-id", "--no-renames", "--raw", commit)
        fields = out.split(b"\0")
        for meta, raw_path in zip(fields[0::2], fields[1::2], strict=False):
            parts = meta.decode().lstrip(":").split()
            if len(parts) == 5 and parts[4] == "M" and parts[0] == parts[1] in REGULAR:
                yield raw_path.decode("utf-8", "replace"), parts[2], parts[3]

    def text(self, blob: str) -> str | None:
        """The blob as text, or None when too large, binary, not UTF-8 or with CR line ends."""
        if self._batch is None:
            self._batch = subprocess.Popen(
                ["git", "cat-file", "--batch"],
                cwd=self.repo,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        assert self._batch.stdin is not None and self._batch.stdout is not None
        self._batch.stdin.write(blob.encode() + b"\n")
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().split()
        if len(header) != 3:
            return None  # "<blob> missing"
        data = self._batch.stdout.read(int(header[2]) + 1)[:-1]
        if len(data) > MAX_BYTES or b"\0" in data or b"\r" in data:
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return text if text.count("\n") < MAX_LINES else None

    def close(self) -> None:
        if self._batch is not None:
            assert self._batch.stdin is not None
            self._batch.stdin.close()
            self._batch.wait()
            self._batch = None


def repo_root(path: str | Path) -> Path:
    done = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], cwd=path, capture_output=True, check=False
    )
    if done.returncode != 0:
        raise MiningError(f"{path}: not in a git repository")
    return Path(done.stdout.decode().strip())


def head_commit(repo: str | Path, rev: str = "HEAD") -> str:
    """The commit `rev` names (HEAD: the one checked out)."""
    if rev.startswith("-"):
        raise MiningError(f"{rev}: not a revision")
    return _Git(repo_root(repo)).run("rev-parse", "--verify", f"{rev}^{{commit}}").decode().strip()


def _candidates(
    git: _Git, limit: int, negatives: int, seed: int, max_commits: int, rev: str = "HEAD"
) -> tuple[list[Case], list[Case]]:
    """Positives and negatives from `rev`'s newest commits until POOL times the wanted counts."""
    pos: list[Case] = []
    neg: list[Case] = []
    seen: set[str] = set()
    for commit in git.commits(max_commits, rev):
        if len(pos) >= POOL * limit and len(neg) >= POOL * negatives:
            break
        for path, old_blob, new_blob in git.modified(commit):
            if PurePosixPath(path).suffix not in LANGUAGES:
                continue
            old, new = git.text(old_blob), git.text(new_blob)
            if old is None or new is None:
                continue
            found = positives(commit, path, old, new)
            if (far := negative(commit, path, old, new, seed)) is not None:
                found.append(far)
            for case in found:
                if (key := case.key()) not in seen:
                    seen.add(key)
                    (pos if case.positive else neg).append(case)
    return pos, neg


def _sample(cases: list[Case], n: int, rng: random.Random) -> list[Case]:
    """A seeded sample of n cases, kept in the pool's (history) order."""
    if len(cases) <= n:
        return list(cases)
    chosen = sorted(rng.sample(range(len(cases)), n))
    return [cases[i] for i in chosen]


def mine(
    repo: str | Path,
    limit: int = 200,
    negatives: int = 50,
    seed: int = 0,
    max_commits: int = MAX_COMMITS,
    rev: str = "HEAD",
) -> list[Case]:
    """Up to `limit` positive then up to `negatives` negative cases from `repo`'s history up to
    `rev` (a fixed commit mines the same cases whatever has been committed since)."""
    git = _Git(repo_root(repo))
    try:
        pos, neg = _candidates(git, limit, negatives, seed, max_commits, rev)
    finally:
        git.close()
    rng = random.Random(seed)
    return _sample(pos, limit, rng) + _sample(neg, negatives, rng)
