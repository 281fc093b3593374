"""The command's exit codes: one table in the code, and the docs' is that table."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from thirdshift._cli.exits import WHEN, Exit, for_signal, markdown

PAGE = Path(__file__).parent.parent / "docs" / "exit-codes.md"
BEGIN, END = "<!-- exit-codes:begin -->\n", "<!-- exit-codes:end -->\n"


def test_the_docs_show_the_table_of_the_code() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert text.count(BEGIN) == text.count(END) == 1, "docs/exit-codes.md has one exit-code table"
    shown = text.split(BEGIN)[1].split(END)[0]

    assert shown == markdown(), f"paste this between the page's markers:\n{markdown()}"


def test_every_code_says_when() -> None:
    assert set(WHEN) == set(Exit)
    assert len({code.value for code in Exit}) == len(Exit)


@pytest.mark.parametrize(
    ("signum", "code"),
    [
        (signal.SIGINT, 130),
        (signal.SIGTERM, 143),
        (signal.SIGHUP, 129),
        (None, 130),  # interrupts.request() from the program itself: as Ctrl-C
    ],
)
def test_a_run_a_signal_stopped_ends_with_128_and_the_signal(signum: int | None, code: int) -> None:
    assert for_signal(signum) == code
