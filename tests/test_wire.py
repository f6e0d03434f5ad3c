"""spec_lsp/wire.py's stdio framing, in process: each body in order, a header found anywhere in a
line, an oversized or zero length refused without reading its body, a wrong length recovered from
at the next well-formed frame, long header lines read in bounded pieces, and `relay` handing the
bodies to the loop in order (the TCP side: tests/security/test_tcp.py)."""

from __future__ import annotations

import asyncio
import io

from hypothesis import given
from hypothesis import strategies as st

from spec_lsp.wire import MAX_LINE_BYTES, read_frames, relay


def frame(body: bytes, length: int | None = None) -> bytes:
    n = len(body) if length is None else length
    return b"Content-Length: %d\r\n\r\n" % n + body


def bodies_of(data: bytes, max_bytes: int = 1024) -> list[bytes]:
    got: list[bytes] = []
    read_frames(io.BytesIO(data), got.append, max_bytes)
    return got


class CountingReader(io.BytesIO):
    """Records the size of each read, so a test can tell a body was never read."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reads: list[int] = []

    def read(self, size: int | None = -1, /) -> bytes:
        self.reads.append(-1 if size is None else size)
        return super().read(size)


@given(st.lists(st.binary(min_size=1, max_size=64), max_size=8))
def test_each_body_is_delivered_whole_and_in_order(bodies: list[bytes]) -> None:
    assert bodies_of(b"".join(frame(b) for b in bodies)) == bodies


def test_a_header_is_found_anywhere_in_its_line_and_other_headers_are_ignored() -> None:
    data = (
        b"garbage Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc\r\n\r\n{}"
        + b"content-length:3\n\n[1]"  # any case, bare newlines
    )
    assert bodies_of(data) == [b"{}", b"[1]"]


def test_an_oversized_length_is_refused_without_reading_its_body() -> None:
    huge = b"Content-Length: 99999999999999999999\r\n\r\n"
    stream = CountingReader(huge + frame(b"{}"))
    got: list[bytes] = []
    read_frames(stream, got.append, 1024)
    assert got == [b"{}"]
    assert stream.reads == [2]  # only the well-formed frame's body was read


def test_a_zero_length_and_a_blank_line_outside_a_header_are_skipped() -> None:
    assert bodies_of(b"\r\n" + frame(b"", 0) + frame(b"ok")) == [b"ok"]


def test_a_body_longer_than_its_header_said_leaves_the_next_frame_readable() -> None:
    # The header says 2; the body is 6 bytes: the 4 left over are read as a (junk) header line,
    # glued to the next header, which is still found in that line.
    data = frame(b'{"a":1}', length=2) + frame(b"[2]")
    assert bodies_of(data) == [b'{"', b"[2]"]


def test_a_body_shorter_than_its_header_said_ends_the_stream_without_a_partial_body() -> None:
    assert bodies_of(frame(b"{}") + frame(b"[1", length=10)) == [b"{}"]


def test_a_header_line_longer_than_the_line_limit_is_read_in_pieces() -> None:
    stream = CountingReader(b"X" * (3 * MAX_LINE_BYTES) + b"\r\n" + frame(b"{}"))
    lines: list[int] = []
    real = stream.readline

    def readline(limit: int | None = -1, /) -> bytes:
        line = real(limit)
        lines.append(len(line))
        return line

    stream.readline = readline  # type: ignore[method-assign]
    got: list[bytes] = []
    read_frames(stream, got.append, 1024)
    assert got == [b"{}"] and max(lines) <= MAX_LINE_BYTES


async def test_relay_hands_each_body_to_the_loop_in_order_and_ends_with_the_stream() -> None:
    bodies = [b"%d" % i for i in range(20)]  # more than QUEUED_MESSAGES: the reader waits
    got: list[bytes] = []
    stream = io.BytesIO(b"".join(frame(b) for b in bodies))
    await asyncio.wait_for(relay(stream, got.append, "test-relay"), 10)
    assert got == bodies
