"""The follow's line splitter: whole lines, in order, never a blank one, never one over the cap."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from thirdshift.machine.follow import LineSplitter


def split(chunks: list[bytes], limit: int = 1 << 20) -> list[str]:
    lines: list[str] = []
    splitter = LineSplitter(lines.append, limit)
    for chunk in chunks:
        splitter.feed(chunk)
    splitter.finish()
    return lines


def test_blank_and_whitespace_only_lines_never_reach_the_reader() -> None:
    chunks = [b"\n\n", b'{"a": 1}\n\n \n\t\r\n', b"  ", b"\n", b'\r\n{"b": 2}\n', b"\n" * 10_000]
    assert split(chunks) == ['{"a": 1}', '{"b": 2}']


def test_a_blank_line_split_across_chunks_is_dropped_and_a_line_around_one_kept() -> None:
    assert split([b" ", b"\t", b" \n"]) == []
    assert split([b"  ", b" x", b" \n"]) == ["   x "]  # its own spaces kept: not a blank line


def test_lines_keep_their_leading_and_trailing_whitespace() -> None:
    assert split([b"a  \n\n \n  b\n \n"]) == ["a  ", "  b"]


def test_a_last_line_without_a_newline_counts_unless_it_is_blank() -> None:
    assert split([b"x\ny"]) == ["x", "y"]
    assert split([b"x\n  "]) == ["x"]


def test_a_line_over_the_limit_is_dropped_and_the_next_one_read() -> None:
    assert split([b"12345", b"6\nok\n", b"1234567\n", b"abc"], limit=5) == ["ok", "abc"]


def test_bytes_that_are_not_utf8_are_decoded_leniently() -> None:
    assert split([b"caf\xc3", b"\xa9 \xff\n"]) == ["caf\u00e9 \ufffd"]


# Any bytes, cut anywhere: what a reference split of the whole stream gives.

_PIECES = st.sampled_from(
    [b"\n", b" ", b"\t", b"\r", b"\x0b", b"\x0c", b"x", b"{}", b"\xff", b"\xc3"]
)


@given(
    st.lists(_PIECES, max_size=60).map(b"".join),
    st.lists(st.integers(0, 60), max_size=8),
    st.integers(1, 8),
)
def test_any_stream_cut_anywhere_gives_its_non_blank_lines_within_the_limit(
    data: bytes, cuts: list[int], limit: int
) -> None:
    bounds = [0, *sorted(min(cut, len(data)) for cut in cuts), len(data)]
    chunks = [data[start:end] for start, end in itertools.pairwise(bounds)]
    expected = [
        line.decode("utf-8", "replace")
        for line in data.split(b"\n")
        if line.strip() and len(line) <= limit
    ]
    assert split(chunks, limit) == expected
