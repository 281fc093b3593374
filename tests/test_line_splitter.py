"""The follow's line splitter: whole lines, in order, never a blank one, never one over a cap."""

from __future__ import annotations

import itertools
import json
import sys
from types import FrameType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from thirdshift._machine import follow
from thirdshift._machine.follow import MAX_PARSED_LINE, READ_SIZE, LineSplitter


def split(chunks: list[bytes], limit: int = MAX_PARSED_LINE) -> list[str]:
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


# Structure: a line whose JSON would take too much memory parsed is never handed on.


def cost(value: object) -> int:
    """The follow's estimate of ``json.dumps(value)`` parsed, from its structure: 256 for each
    `{`, 96 for each `[` and each `,`."""
    if isinstance(value, dict):
        return 256 + 96 * max(len(value) - 1, 0) + sum(cost(item) for item in value.values())
    if isinstance(value, list):
        return 96 + 96 * max(len(value) - 1, 0) + sum(cost(item) for item in value)
    return 0


def test_a_line_of_too_much_json_structure_is_dropped() -> None:
    dense = b"[" + b"{}," * 200_000 + b"{}]"  # 600 kB: 70 MB by the estimate (each {} a dict)
    assert split([dense, b"\n", b'{"after": 1}\n']) == ['{"after": 1}']
    assert split([b"[" + b"0," * 600_000 + b"0]"]) == []  # the last line, unended


def test_a_long_list_of_real_values_is_still_parsed() -> None:
    # As a Claude result listing 200,000 errors: 3.6 MB, 19 MB by the estimate.
    line = json.dumps({"type": "result", "errors": ["another problem"] * 200_000})
    assert split([line.encode(), b"\n"]) == [line]


def test_marks_inside_strings_do_not_count() -> None:
    text = '{"code": "' + 'f(a, b) { [x] } \\" \\\\' * 150_000 + '"}'
    assert cost(json.loads(text)) == 256
    assert split([text.encode(), b"\n"]) == [text]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab,{["\\:} \u00e9'),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet='k,{["\\', max_size=3), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(_JSON, st.integers(0, 3000))
def test_a_json_line_is_handed_on_exactly_when_its_estimate_is_within_the_bound(
    value: object, bound: int
) -> None:
    line = json.dumps(value, ensure_ascii=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(follow, "MAX_PARSED_MEMORY", bound)
        handed_on = split([line.encode(), b"\n"])
    assert handed_on == ([line] if cost(value) <= bound else [])


# For a reader of JSON objects: only lines that may hold one are handed on, found in C.


def split_objects(chunks: list[bytes], limit: int = MAX_PARSED_LINE) -> list[str]:
    lines: list[str] = []
    splitter = LineSplitter(lines.append, limit, objects_only=True)
    for chunk in chunks:
        splitter.feed(chunk)
    splitter.finish()
    return lines


def test_only_lines_that_may_hold_a_json_object_are_handed_on() -> None:
    stream = [b'x\n{"a": 1}\n\n{\n}\n {"b": [2]} \r\n\t{}\nnot {"c": 3}\n{"d": 4} x\n', b'{"e"}']
    assert split_objects(stream) == ['{"a": 1}', ' {"b": [2]} \r', "\t{}", '{"e"}']


def test_an_object_line_split_across_chunks_is_whole_and_junk_around_it_dropped() -> None:
    chunks = [b"x\ny\n{", b'"a"', b": 1}", b"\nz\n", b'\n  {"b"', b": 2}  "]
    assert split_objects(chunks) == ['{"a": 1}', '  {"b": 2}  ']


# What json.loads takes around a value, and a few bytes it does not.
_OBJECT_PIECES = st.sampled_from(
    [b"\n", b" ", b"\t", b"\r", b"\x0b", b"\x0c", b"x", b"{", b"}", b'"', b"\xff", b"\xc3"]
)


@given(
    st.lists(_OBJECT_PIECES, max_size=60).map(b"".join),
    st.lists(st.integers(0, 60), max_size=8),
    st.integers(1, 8),
    st.sampled_from([0, 10**9]),
)
def test_any_stream_cut_anywhere_gives_its_object_lines_within_the_limit(
    data: bytes, cuts: list[int], limit: int, short_line: int
) -> None:
    # Every chunk split (its lines long enough), or every chunk searched (its lines short).
    bounds = [0, *sorted(min(cut, len(data)) for cut in cuts), len(data)]
    chunks = [data[start:end] for start, end in itertools.pairwise(bounds)]
    expected = [
        line.decode("utf-8", "replace")
        for line in data.split(b"\n")
        if line.strip(b" \t\r").startswith(b"{")
        and line.strip(b" \t\r").endswith(b"}")
        and len(line) <= limit
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(follow, "_SHORT_LINE", short_line)
        assert split_objects(chunks, limit) == expected


class StepCounter:
    """Counts the lines of Python run (in any frame) while it is installed as the tracer."""

    def __init__(self) -> None:
        self.steps = 0

    def __call__(self, frame: FrameType, event: str, arg: object) -> StepCounter:
        self.steps += 1
        return self


SHORT_JUNK = [b"x\n", b"\n", b" \n", b"xy\n", b"{\n", b"}\n", b"{x\n", b"x}\n", b"\x00\n"]


@pytest.mark.parametrize("shape", SHORT_JUNK, ids=repr)
def test_short_lines_that_hold_no_object_cost_a_bounded_number_of_python_steps(
    shape: bytes,
) -> None:
    # 4 MiB of the shape (up to 4 million lines) in 1 MiB reads: each read costs the same few
    # steps, whatever its lines; a step per line would be millions.
    chunk = shape * (READ_SIZE // len(shape))
    handed_on: list[str] = []
    splitter = LineSplitter(handed_on.append, objects_only=True)
    counter = StepCounter()
    sys.settrace(counter)
    try:
        for _ in range(4):
            splitter.feed(chunk)
        splitter.finish()
    finally:
        sys.settrace(None)
    assert handed_on == []
    assert counter.steps < 4 * 100


@pytest.mark.parametrize("length", [64, 100, 1000])
def test_longer_lines_that_hold_no_object_cost_at_most_a_few_steps_each(length: int) -> None:
    # Split, not searched: a step or two for a line of 64 bytes or more, none of them a call.
    chunk = (b"x" * (length - 1) + b"\n") * (READ_SIZE // length)
    handed_on: list[str] = []
    splitter = LineSplitter(handed_on.append, objects_only=True)
    counter = StepCounter()
    sys.settrace(counter)
    try:
        splitter.feed(chunk)
    finally:
        sys.settrace(None)
    assert handed_on == []
    assert counter.steps < 100 + 3 * READ_SIZE // 64
