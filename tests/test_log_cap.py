"""The Session log's cap, chunk by chunk: what the log keeps, what it drops, what is read.

A pipe stands in for the CLI's stdout: each chunk is written to it and copied at once, as the
watch does when stdout is readable.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from thirdshift._machine.follow import MAX_PARSED_LINE, HeldInterrupt, StdoutCopy


class Copied:
    def __init__(self, log: Path, cap: int | None) -> None:
        self.read_end, self.write_end = os.pipe()
        self.log_fd = os.open(log, os.O_WRONLY | os.O_CREAT, 0o600)
        self.lines: list[str] = []
        self.copy = StdoutCopy(
            self.read_end,
            self.log_fd,
            self.lines.append,
            read_size=8 * 1024 * 1024,
            interrupt=HeldInterrupt(),
            max_log_bytes=cap,
        )

    def chunk(self, data: bytes) -> None:
        for start in range(0, len(data), 60000):  # a pipe holds 64 KiB
            os.write(self.write_end, data[start : start + 60000])
            self.copy.copy_ready()

    def close(self) -> None:
        for fd in (self.read_end, self.write_end, self.log_fd):
            os.close(fd)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "s.jsonl"


@pytest.fixture
def capped(log: Path) -> Iterator[Copied]:
    copied = Copied(log, cap=10)
    yield copied
    copied.close()


def test_under_the_cap_everything_is_logged_and_read(capped: Copied, log: Path) -> None:
    capped.chunk(b"abc\ndef\n")

    assert log.read_bytes() == b"abc\ndef\n"
    assert capped.lines == ["abc", "def"]
    assert not capped.copy.full


def test_a_line_ending_exactly_at_the_cap_fills_the_log(capped: Copied, log: Path) -> None:
    capped.chunk(b"123456789\n")
    capped.chunk(b"more\n")

    assert log.read_bytes() == b"123456789\n"
    assert capped.copy.full
    assert capped.copy.dropped == 5
    assert capped.lines == ["123456789"]


def test_the_line_that_crosses_the_cap_is_kept_to_its_end(capped: Copied, log: Path) -> None:
    capped.chunk(b"12345\n67890abc\nnever\n")

    assert log.read_bytes() == b"12345\n67890abc\n"
    assert capped.lines == ["12345", "67890abc"]
    assert capped.copy.dropped == len(b"never\n")


def test_a_crossing_line_that_goes_on_in_later_chunks_is_kept_to_its_end(
    capped: Copied, log: Path
) -> None:
    capped.chunk(b"1234567890")  # exactly at the cap, mid-line
    capped.chunk(b"abc")
    capped.chunk(b"def\nnext\n")

    assert log.read_bytes() == b"1234567890abcdef\n"
    assert capped.copy.full
    assert capped.copy.dropped == len(b"next\n")


def test_a_line_that_never_ends_is_cut_past_the_cap(log: Path) -> None:
    copied = Copied(log, cap=10)
    try:
        copied.chunk(b"x" * (10 + MAX_PARSED_LINE + 100))
    finally:
        copied.close()

    assert log.stat().st_size == 10 + MAX_PARSED_LINE
    assert copied.copy.dropped == 100
    assert copied.copy.full


def test_without_a_cap_nothing_is_dropped(log: Path) -> None:
    copied = Copied(log, cap=None)
    try:
        copied.chunk(b"y\n" * 100_000)
    finally:
        copied.close()

    assert log.stat().st_size == 200_000
    assert (copied.copy.full, copied.copy.dropped) == (False, 0)
