"""A silent session shows it is alive: the line that says what still runs, on a made-up clock."""

from __future__ import annotations

from thirdshift import Watchdogs
from thirdshift._machine.still_running import StillRunning
from thirdshift._machine.watchdogs import Watchdog


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def still_running(every: float | None = 300.0) -> tuple[StillRunning, Clock, list[str]]:
    clock, said = Clock(), list[str]()
    return StillRunning(every, said.append, "claude", clock=clock), clock, said


def test_after_the_silence_one_line_says_what_runs_and_for_how_long() -> None:
    still, clock, said = still_running()
    clock.now += 10
    still.said("$ pnpm test")  # the command started 10 s in; nothing said since
    still.check(clock.now + 299)
    assert said == []

    still.check(clock.now + 300)

    assert said == ["still running: $ pnpm test (5m)"]
    assert still.next_deadline() == clock.now + 600  # again, while the silence lasts
    still.check(clock.now + 600)
    assert said[-1] == "still running: $ pnpm test (10m)"


def test_a_progress_line_starts_the_silence_again() -> None:
    still, clock, said = still_running()
    clock.now += 200
    still.said("Edit notes.txt")
    still.check(clock.now + 299)
    assert said == []
    assert still.next_deadline() == clock.now + 300


def test_before_the_stream_names_any_work_what_runs_is_the_cli() -> None:
    still, clock, said = still_running()
    still.said("session started")
    still.check(clock.now + 300)
    assert said == ["still running: claude (5m)"]


def test_none_says_nothing_ever() -> None:
    still, clock, said = still_running(None)
    still.check(clock.now + 10**6)
    assert (said, still.next_deadline()) == ([], None)


def test_the_watchdog_wakes_for_it_and_says_it_only_while_the_cli_runs() -> None:
    still, clock, said = still_running(60.0)
    watchdog = Watchdog(
        Watchdogs(idle=1800.0, after_result=None),
        last_output=lambda: clock.now,
        turns_ended=lambda: 0,
        session_id=lambda: None,
        resume=None,
        still_running=still,
    )
    assert watchdog.next_deadline(cli_running=True) == clock.now + 60  # before the idle limit
    assert watchdog.check(clock.now + 60, cli_running=False) is None
    assert said == []  # the CLI has exited: what is left is the drain's, and says nothing

    assert watchdog.check(clock.now + 60, cli_running=True) is None  # it stops nothing
    assert said == ["still running: claude (1m)"]
