"""Progress lines: the default sink's prefix, and durations written one way."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_thirdshift import ScriptedOutside
from thirdshift import Logs, Sessions, Watchdogs, claude
from thirdshift._machine.watchdogs import Watchdog
from thirdshift._progress import duration, to_stderr_as


def test_a_named_sink_puts_the_log_name_after_the_time(capsys: pytest.CaptureFixture[str]) -> None:
    to_stderr_as("issue-42")("implement: session started")

    (line,) = capsys.readouterr().err.splitlines()
    assert re.fullmatch(r"thirdshift: \d\d:\d\d:\d\d \[issue-42\] implement: session started", line)


def test_parallel_runs_are_told_apart_by_the_default_sink(
    tmp_path: Path, scripted_outside: ScriptedOutside, capsys: pytest.CaptureFixture[str]
) -> None:
    # No session id to resume by: each run says so in a line of its own.
    scripted_outside.ends(killed=("make",)).ends(killed=("make",))

    for name in ("issue-42", "issue-43"):
        with Sessions.within(Logs(tmp_path, name), tmp_path, claude()) as sessions:
            sessions.run("implement", "go")

    first, second = capsys.readouterr().err.splitlines()
    assert re.fullmatch(r"thirdshift: \d\d:\d\d:\d\d \[issue-42\] implement: .*make.*", first)
    assert re.fullmatch(r"thirdshift: \d\d:\d\d:\d\d \[issue-43\] implement: .*make.*", second)


def test_a_given_sink_gets_the_lines_without_a_prefix(
    tmp_path: Path, scripted_outside: ScriptedOutside
) -> None:
    scripted_outside.ends(killed=("make",))
    lines: list[str] = []

    with Sessions.within(Logs(tmp_path, "n"), tmp_path, claude(), progress=lines.append) as s:
        s.run("implement", "go")

    assert len(lines) == 1
    assert lines[0].startswith("implement: the session ended with a background task")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (45, "45s"),
        (1.5, "1.5s"),  # a limit someone set, under a minute: as set
        (0.25, "0.25s"),
        (60.0, "1m"),
        (65, "1m 5s"),
        (90.5, "1m 30s"),
        (1800, "30m"),
        (3599, "59m 59s"),
        (7200, "2h"),
        (7500, "2h 5m"),
        (7230, "2h"),
    ],
)
def test_every_duration_is_written_one_way(seconds: float, text: str) -> None:
    assert duration(seconds) == text


@pytest.mark.parametrize(
    ("limits", "why"),
    [
        (Watchdogs(idle=None, after_result=None, wall=1.5), "over its 1.5s limit"),
        (Watchdogs(idle=0.5, after_result=None), "no output for 0.5s"),
        (Watchdogs(idle=None, after_result=2.5), "still running 2.5s after its result"),
    ],
)
def test_a_watchdog_says_its_limit_unrounded(limits: Watchdogs, why: str) -> None:
    watchdog = Watchdog(
        limits, last_output=lambda: 0.0, turns_ended=lambda: 1, session_id=lambda: None, resume=None
    )
    watchdog.check(0.0, cli_running=True)  # the turn's end is seen at 0

    fired = watchdog.check(1e9, cli_running=True)  # long after every limit

    assert fired is not None
    assert fired.why == why
