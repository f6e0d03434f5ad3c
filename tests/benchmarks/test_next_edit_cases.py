"""`bench next-edit`'s mining on small git repositories the tests build: the cases' history,
cursor and expected edit exactly, negatives far from every hunk, the deterministic choice, and
the files it skips (binary, large, not UTF-8, other languages, added)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from spec_lsp.benchmarks import next_edit_cases as nc
from spec_lsp.benchmarks.next_edit_cases import Case, after_history, apply, mine
from spec_lsp.replay.document import Edit


class Repo:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        flags = [
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
        ]
        done = subprocess.run(
            ["git", *flags, *args], cwd=self.root, capture_output=True, check=True, text=True
        )
        return done.stdout

    def commit(self, files: dict[str, str | bytes], message: str = "c") -> str:
        for name, content in files.items():
            path = self.root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
        self.git("add", *files)
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


def numbered(n: int, prefix: str = "x") -> list[str]:
    return [f"{prefix}{i} = {i}\n" for i in range(n)]


def text_of(lines: list[str]) -> str:
    return "".join(lines)


def two_line_change(repo: Repo, base: list[str], k: int | str) -> None:
    """Commits `base` with its lines 2 and 6 changed to name `k`: one two-hunk case."""
    new = list(base)
    new[2], new[6] = f"k{k} = 2\n", f"k{k} = 6\n"
    repo.commit({"d.py": text_of(new)}, f"change {k}")


def offset(lines: list[str], line: int) -> int:
    return len(text_of(lines[:line]))


def test_a_two_hunk_change_is_one_positive_case_with_exact_history_cursor_and_answer(
    tmp_path: Path,
) -> None:
    repo = Repo(tmp_path)
    old = numbered(12)
    repo.commit({"a.py": text_of(old)})
    new = list(old)
    new[3] = "total3 = 3\n"
    new[8] = "total8 = 8\n"
    commit = repo.commit({"a.py": text_of(new)})
    cases = mine(tmp_path, limit=10, negatives=0)
    assert len(cases) == 1
    case = cases[0]
    assert (case.commit, case.path, case.language, case.text) == (
        commit,
        "a.py",
        "python",
        text_of(old),
    )
    assert case.id == f"{commit[:12]}:a.py:1"
    # each hunk trimmed to what differs: "x3 = 3" -> "total3 = 3" replaces "x" with "total"
    assert case.history == (Edit(offset(old, 3), 1, "total"),)
    after = text_of(new[:4] + old[4:])
    assert after_history(case) == after
    assert case.cursor == offset(new, 3) + len("total")  # where the typing ended
    assert case.expected == Edit(offset(new, 8), 1, "total")
    assert apply(after, case.expected) == text_of(new)


def test_insertions_and_deletions_chain_up_to_the_commit_text(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    old = numbered(20)
    repo.commit({"m.ts": text_of(old)})
    new = (
        old[:2]
        + ["inserted = 1\n", "inserted = 2\n"]
        + old[2:6]
        + old[7:12]
        + ["y = 0\n"]
        + old[13:]
    )
    repo.commit({"m.ts": text_of(new)})
    cases = mine(tmp_path, limit=10, negatives=0)
    assert [len(c.history) for c in cases] == [1, 2]
    assert all(c.language == "typescript" for c in cases)
    first, second = cases
    assert first.history[0] == Edit(offset(old, 2), 0, "inserted = 1\ninserted = 2\n")
    assert first.cursor == offset(new, 3) + len("inserted = 2")  # the end of the last new line
    assert first.expected == Edit(offset(new, 8), len(old[6]), "")  # the deletion
    assert second.history == first.history + (first.expected,)
    # a pure deletion's cursor: the start of the line after it
    assert second.cursor == offset(new, 8)
    assert second.expected == Edit(offset(new, 13), len("x12 = 12"), "y = 0")
    assert apply(after_history(second), second.expected) == text_of(new)


def test_a_next_hunk_far_from_the_cursor_and_large_hunks_are_no_positive(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    old = numbered(60)
    repo.commit({"far.py": text_of(old), "big.py": text_of(old)})
    far = list(old)
    far[2], far[2 + nc.NEAR_LINES + 2] = "a = 1\n", "b = 2\n"
    big = list(old)
    big[0:12] = [f"z{i} = 0\n" for i in range(12)]  # 12 changed lines: too large
    big[20] = "c = 3\n"
    repo.commit({"far.py": text_of(far), "big.py": text_of(big)})
    assert [c for c in mine(tmp_path, limit=10, negatives=0)] == []


def test_a_negative_has_every_hunk_as_history_and_its_cursor_far_from_them(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    old = numbered(100)
    repo.commit({"n.lua": text_of(old)})
    new = list(old)
    new[10] = "renamed10 = 10\n"
    new[14] = "renamed14 = 14\n"
    commit = repo.commit({"n.lua": text_of(new)})
    cases = mine(tmp_path, limit=0, negatives=5)
    assert len(cases) == 1
    case = cases[0]
    assert case.expected is None and not case.positive
    assert case.id == f"{commit[:12]}:n.lua:far"
    assert len(case.history) == 2 and after_history(case) == text_of(new)
    line = text_of(new)[: case.cursor].count("\n")
    assert line >= 14 + nc.FAR_LINES
    assert text_of(new)[case.cursor] == "\n"  # at the end of its line
    assert mine(tmp_path, limit=0, negatives=5, seed=0) == cases
    lines = {
        text_of(new)[: c.cursor].count("\n") for s in range(8) for c in mine(tmp_path, 0, 5, s)
    }
    assert len(lines) > 1 and min(lines) >= 14 + nc.FAR_LINES  # the seed picks the line


def test_the_choice_is_deterministic_sampled_in_history_order_and_deduplicated(
    tmp_path: Path,
) -> None:
    repo = Repo(tmp_path)
    base = numbered(30)
    repo.commit({"d.py": text_of(base)})
    for k in range(6):
        two_line_change(repo, base, k)
        repo.commit({"d.py": text_of(base)}, f"revert {k}")
    two_line_change(repo, base, 0)  # the same case as change 0
    everything = mine(tmp_path, limit=100, negatives=0)
    # 6 changes and 6 reverts, each one case; the repeated change counts once
    assert len(everything) == 12 and len({c.key() for c in everything}) == 12
    some = mine(tmp_path, limit=5, negatives=0)
    assert some == mine(tmp_path, limit=5, negatives=0)
    order = [c.id for c in everything]
    assert [order.index(c.id) for c in some] == sorted(order.index(c.id) for c in some)
    assert mine(tmp_path, limit=5, negatives=0, seed=1) != some


def test_binary_large_non_utf8_other_languages_and_added_files_are_skipped(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    old = numbered(12)
    large = numbered(nc.MAX_LINES + 5)
    files: dict[str, str | bytes] = {
        "bin.py": text_of(old).encode() + b"\0",
        "latin.py": text_of(old).replace("x1 ", "\xe9 ").encode("latin-1"),
        "notes.md": text_of(old),
        "crlf.py": text_of(old).replace("\n", "\r\n"),
        "large.py": text_of(large),
    }
    repo.commit(files)
    changed: dict[str, str | bytes] = {}
    for name, content in files.items():
        if isinstance(content, bytes):
            changed[name] = content.replace(b"x3 ", b"y3 ").replace(b"x8 ", b"y8 ")
        else:
            changed[name] = content.replace("x3 ", "y3 ").replace("x8 ", "y8 ")
    changed["added.py"] = text_of(old)
    repo.commit(changed)
    assert mine(tmp_path, limit=10, negatives=10) == []


def test_not_a_repository_is_a_mining_error(tmp_path: Path) -> None:
    with pytest.raises(nc.MiningError):
        mine(tmp_path, limit=1)


def test_this_repository_has_enough_cases() -> None:
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        pytest.skip("not a git checkout")
    cases = mine(root, limit=200, negatives=50)
    assert sum(c.positive for c in cases) == 200 and len(cases) == 250
    for case in cases[:20] + cases[-10:]:
        assert isinstance(case, Case)
        after = after_history(case)
        assert 0 <= case.cursor <= len(after)
        if case.expected is not None:
            assert apply(after, case.expected) != after


def test_a_fixed_revision_mines_the_same_cases_whatever_is_committed_after_it(
    tmp_path: Path,
) -> None:
    repo = Repo(tmp_path)
    base = numbered(30)
    repo.commit({"d.py": text_of(base)})
    for k in range(3):
        two_line_change(repo, base, k)
    fixed = repo.git("rev-parse", "HEAD").strip()
    then = mine(tmp_path, limit=100, negatives=0)
    for k in range(3, 6):
        two_line_change(repo, base, k)
    assert mine(tmp_path, limit=100, negatives=0) != then
    assert mine(tmp_path, limit=100, negatives=0, rev=fixed) == then
    assert mine(tmp_path, limit=100, negatives=0, rev=fixed[:10]) == then
    assert nc.head_commit(tmp_path, fixed[:10]) == fixed
    for bad in ("--all", "no-such-branch"):
        with pytest.raises(nc.MiningError):
            mine(tmp_path, limit=1, rev=bad)
        with pytest.raises(nc.MiningError):
            nc.head_commit(tmp_path, bad)
