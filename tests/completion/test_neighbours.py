"""completion/neighbours.py, other files' chunks when files go: a closed document's go (issue 27:
what the user closed is not sent on), a deleted file's go, a renamed file's follow its new name;
the ring and its pending notes stay bounded (over LSP: tests/server/test_crossfile_files.py)."""

from __future__ import annotations

from spec_lsp.completion.neighbours import RING_SIZE, Neighbours

LINE = "def helper(value): return value * 2 + 1  # long enough to be a chunk"


def names(ring: Neighbours, exclude: str = "") -> list[str]:
    return [name for name, _ in ring.chunks(exclude)]


def ring_of(*uris: str) -> Neighbours:
    ring = Neighbours()
    for uri in uris:
        ring.note(uri, [f"{LINE} {uri}"], 0)
    ring.settle()
    return ring


def test_a_closed_documents_chunks_and_pending_note_go() -> None:
    ring = ring_of("file:///w/a.py", "file:///w/b.py")
    ring.note("file:///w/a.py", [f"{LINE} edited"], 0)  # an edit, not in the ring yet
    assert ring.forget("file:///w/a.py")  # closed: the ring changed
    assert not ring.settle()  # the pending edit went with the close
    assert names(ring) == ["b.py"]


def test_a_deleted_file_or_folder_leaves_the_ring_and_the_notes() -> None:
    ring = ring_of("file:///w/a.py", "file:///w/pkg/b.py", "file:///w/pkg/c.py", "file:///w/d.py")
    ring.note("file:///w/pkg/e.py", [LINE], 0)
    assert ring.drop("file:///w/a.py")
    assert names(ring) == ["b.py", "c.py", "d.py"]
    assert ring.drop("file:///w/pkg/")  # a folder: everything under it
    assert names(ring) == ["d.py"]
    assert not ring.settle()  # pkg/e.py's note went too
    assert not ring.drop("file:///w/pkgs.py")  # a name that only begins the same stays
    assert names(ring) == ["d.py"]


def test_a_renamed_file_or_folder_keeps_its_chunks_and_place_under_the_new_name() -> None:
    ring = ring_of("file:///w/a.py", "file:///w/pkg/b.py", "file:///w/d.py")
    ring.rename("file:///w/a.py", "file:///w/z.py")
    ring.rename("file:///w/pkg", "file:///w/lib")
    assert names(ring) == ["z.py", "b.py", "d.py"]
    assert names(ring, exclude="file:///w/z.py") == ["b.py", "d.py"]  # by their new names
    assert names(ring, exclude="file:///w/lib/b.py") == ["z.py", "d.py"]
    assert names(ring, exclude="file:///w/pkg/b.py") == ["z.py", "b.py", "d.py"]


def test_the_ring_and_the_pending_notes_are_bounded() -> None:
    ring = Neighbours()
    for i in range(3 * RING_SIZE):  # many files opened without a pause
        ring.note(f"file:///w/m{i}.py", [f"{LINE} {i}"], 0)
    # The newest: a ring's worth, and the current document's note, which waits while they settle.
    assert ring.pending == RING_SIZE + 1
    ring.settle()
    assert names(ring) == [f"m{i}.py" for i in range(2 * RING_SIZE, 3 * RING_SIZE)]
