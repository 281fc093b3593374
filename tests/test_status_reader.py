"""The supervisor's status lines read as untrusted input (thirdshift._machine.status)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from thirdshift._machine.status import StatusReader
from thirdshift._machine.supervisor import LEFT_LISTED, MAX_LINE

STARTED = b"started 42\n"


def read(*chunks: bytes, fds: int = 1) -> StatusReader:
    reader = StatusReader()
    for index, chunk in enumerate(chunks):
        reader.feed(chunk, fds if index == 0 else 0)
    return reader


def test_a_whole_session_is_read_in_order() -> None:
    reader = read(STARTED, b"exit 256\nleft 736c65657000333030\nleft-unlisted 2\ngone\n")

    assert reader.violation is None
    assert (reader.cli_pid, reader.wait_status) == (42, 256)
    assert reader.left == [b"sleep\x00300"]
    assert reader.left_unlisted == 2
    assert reader.said_gone


def test_lines_split_anywhere_between_reads_are_joined() -> None:
    reader = StatusReader()
    reader.feed(STARTED, 1)
    for byte in b"exit 0\nleft 6869\ngone\n":
        reader.feed(bytes([byte]))

    assert reader.violation is None
    assert reader.left == [b"hi"]
    assert reader.said_gone


@pytest.mark.parametrize(
    ("said", "why"),
    [
        (b"\xff\xfe\n", "an unknown line"),
        (b"exit x\n", "a malformed number"),
        (b"left zz\n", "a malformed 'left'"),
        (b"left-unlisted " + b"9" * 3000 + b"\n", "a malformed number"),
        (b"left-unlisted " + b"9" * 5000 + b"\n", "a line too long"),
        (b"exit 70000\n", "a wait status out of range"),
        (b"started 43\n", "'started' twice"),
        (b"gone\nexit 0\n", "a line after 'gone'"),
        (b"exit 0\nexit 0\n", "'exit' out of turn"),
        (b"spawn-error \x1b[2J\n", "'spawn-error' out of turn"),
        (b"x" * (MAX_LINE + 1), "a line too long"),
        (b"gone \n", "an unknown line"),
    ],
)
def test_anything_the_protocol_does_not_allow_is_a_violation(said: bytes, why: str) -> None:
    reader = read(STARTED, said)

    assert reader.violation == why


def test_words_out_of_turn_before_started_are_violations() -> None:
    assert read(b"exit 0\n", fds=0).violation == "'exit' out of turn"
    assert read(b"left 6869\n", fds=0).violation == "'left' before 'started'"
    assert read(b"spawn-error \x01\n", fds=0).violation == "a malformed 'spawn-error'"


OTHERWISE = "descriptors sent other than with 'started' or 'listening'"


def test_descriptors_come_only_with_the_started_line() -> None:
    reader = StatusReader()
    reader.feed(STARTED, 1)
    reader.feed(b"exit 0\n", 1)

    assert reader.violation == OTHERWISE
    assert read(b"exit 0\n", fds=1).violation == OTHERWISE


def test_a_sandboxs_listening_sockets_come_first_with_as_many_descriptors_as_it_says() -> None:
    reader = StatusReader()
    assert reader.feed(b"listening 2\n", 2) == ["listening"]
    assert reader.feed(STARTED, 2) == ["started"]
    assert (reader.listening, reader.violation) == (2, None)


@pytest.mark.parametrize(
    ("lines", "why"),
    [
        ([(b"listening 2\n", 1)], "'listening' without its descriptors"),
        ([(STARTED, 1), (b"listening 1\n", 1)], OTHERWISE),
        ([(b"listening 1\n", 1), (b"listening 1\n", 1)], OTHERWISE),
        ([(b"listening x\n", 0)], "a malformed number"),
    ],
)
def test_listening_out_of_turn_or_without_its_descriptors_is_a_violation(
    lines: list[tuple[bytes, int]], why: str
) -> None:
    reader = StatusReader()
    for data, fds in lines:
        reader.feed(data, fds)

    assert reader.violation == why


def test_left_lines_are_capped_as_they_arrive() -> None:
    one = b"left " + b"61" * 1000 + b"\n"
    reader = read(STARTED, one * (LEFT_LISTED + 50_000))

    assert reader.violation == "more 'left' lines than the supervisor lists"
    assert len(reader.left) == LEFT_LISTED


def test_a_line_without_end_is_refused_once_past_the_limit_not_kept() -> None:
    reader = read(STARTED, *[b"a" * 65536] * 128)  # 8 MiB with no newline

    assert reader.violation == "a line too long"
    assert len(reader._buffer) <= MAX_LINE


def test_nothing_is_read_after_a_violation() -> None:
    reader = read(STARTED, b"bogus\n", b"gone\n")

    assert reader.violation == "an unknown line"
    assert not reader.said_gone


@given(st.lists(st.binary(max_size=300), max_size=20), st.integers(0, 3))
def test_whatever_bytes_arrive_the_reader_never_raises_and_keeps_little(
    chunks: list[bytes], fds: int
) -> None:
    reader = StatusReader()
    for index, chunk in enumerate(chunks):
        words = reader.feed(chunk, fds if index == 0 else 0)
        assert all(word.isascii() for word in words)
    assert len(reader._buffer) <= MAX_LINE
    assert len(reader.left) <= LEFT_LISTED
    assert reader.violation is None or isinstance(reader.violation, str)


@given(st.binary(min_size=1, max_size=200).filter(lambda junk: b"\n" not in junk))
def test_a_stray_byte_glued_to_the_real_lines_is_never_believed(junk: bytes) -> None:
    reader = StatusReader()
    reader.feed(junk + STARTED + b"exit 0\ngone\n", 1)

    assert reader.violation is not None
    assert not reader.said_gone
