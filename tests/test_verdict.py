"""How a call ended, decided without processes: a real reader fed lines, a made-up Watched.

:func:`thirdshift._machine.verdict.verdict` is pure, so each way a call can end is one test.
"""

from __future__ import annotations

import errno
import signal
from dataclasses import replace
from pathlib import Path

import pytest
from harness_helpers import read_all, transcript_lines
from test_claude_reader import SESSION, init, task_started
from test_claude_reader import result as claude_result

from thirdshift import (
    Budget,
    BudgetExhausted,
    Interrupted,
    ResumeTargetMissing,
    SessionFailed,
    SessionStalled,
    ThirdshiftError,
    Usage,
)
from thirdshift._budget import Spending
from thirdshift._machine.supervised import CliExit
from thirdshift._machine.verdict import Ran, Verdict, verdict
from thirdshift._machine.watch import Watched
from thirdshift._machine.watchdogs import Fired
from thirdshift.harness import ClaudeReader
from thirdshift.harness._builtin.claude import ClaudeHarness

LOG = Path("/logs/k.log")
RAN = Ran(kind="k", harness=ClaudeHarness(), program="/bin/claude", log=LOG, seconds=3.0)
EXITED_0 = CliExit(code=0, signal=None)
ENDED_WELL = Watched(
    cli_exit=EXITED_0,
    spawn_error=None,
    log_error=None,
    all_gone=True,
    interrupted=False,
    containment="scan",
)


def result(*, is_error: bool = False, text: str = "done") -> str:
    """Claude's result line, as tests/test_claude_reader.py builds it."""
    subtype = "error_during_execution" if is_error else "success"
    return claude_result(subtype=subtype, is_error=is_error, text=text)


def reader_of(*lines: str) -> ClaudeReader:
    reader = ClaudeReader(Path("/w"))
    read_all(reader, list(lines))
    return reader


def failure_of(decided: Verdict) -> ThirdshiftError | Interrupted:
    assert decided.ended is None
    assert decided.error is not None
    return decided.error


def test_a_session_that_ended_well_returns_its_ending_with_the_work_it_left() -> None:
    watched = replace(ENDED_WELL, left=(("bash", "-c", "npm run dev"),))
    ran = replace(RAN, killed_on_file=("a cancelled shell",))

    decided = verdict(watched, reader_of(init(), result()), ran)

    assert decided.error is None
    assert decided.ended is not None
    assert decided.ended.session_id == SESSION
    assert decided.ended.final_message == "done"
    assert decided.ended.killed == ("npm run dev", "a cancelled shell")
    assert decided.ended.containment == "scan"
    assert decided.said == ("k: session ended after 3s: 2 turns, $0.50",)


def test_a_failed_exit_fails_naming_the_exit_code_and_the_diagnostic() -> None:
    watched = replace(ENDED_WELL, cli_exit=CliExit(code=1, signal=None))
    ran = replace(RAN, stderr_line="boom on stderr")

    decided = verdict(watched, reader_of(init()), ran)

    error = failure_of(decided)
    assert isinstance(error, SessionFailed)
    assert str(error).startswith("claude exited 1: boom on stderr")
    assert error.exit_code == 1
    assert error.session_id == SESSION
    assert error.log == LOG
    assert "failed (claude exited 1)" in decided.said[0]


def test_a_failed_result_fails_even_on_exit_0_with_the_streams_text() -> None:
    decided = verdict(ENDED_WELL, reader_of(init(), result(is_error=True, text="no luck")), RAN)

    error = failure_of(decided)
    assert isinstance(error, SessionFailed)
    assert str(error).startswith("claude's turn failed")
    assert "no luck" in str(error)


def test_a_cli_ended_by_a_signal_fails_naming_it() -> None:
    watched = replace(ENDED_WELL, cli_exit=CliExit(code=None, signal=signal.SIGKILL))

    error = failure_of(verdict(watched, reader_of(init()), RAN))

    assert isinstance(error, SessionFailed)
    assert str(error) == "claude exited by signal SIGKILL"
    assert error.signal == signal.SIGKILL


def test_a_lost_supervisor_fails_the_session() -> None:
    watched = replace(ENDED_WELL, cli_exit=None, all_gone=False, supervisor_lost=True)

    error = failure_of(verdict(watched, reader_of(init(), result()), RAN))

    assert str(error) == "claude ended with no exit status (its supervisor was lost)"


def test_a_stop_that_did_not_finish_fails_the_session() -> None:
    watched = replace(ENDED_WELL, all_gone=False)

    error = failure_of(verdict(watched, reader_of(init(), result()), RAN))

    assert "the stop of claude's session did not finish" in str(error)


@pytest.mark.parametrize(
    ("what", "raised"),
    [("idle", SessionStalled), ("wall", SessionStalled), ("other_session", ResumeTargetMissing)],
)
def test_a_watchdogs_stop_fails_as_what_fired(what: str, raised: type[SessionFailed]) -> None:
    watched = replace(ENDED_WELL, cli_exit=CliExit(code=None, signal=signal.SIGTERM))
    watched = replace(watched, fired=Fired(what, "no output for 30m"))  # type: ignore[arg-type]

    decided = verdict(watched, reader_of(init()), RAN)

    error = failure_of(decided)
    assert type(error) is raised
    assert str(error) == "claude was stopped: no output for 30m"
    assert error.signal == signal.SIGTERM
    assert error.containment == "scan"
    if isinstance(error, SessionStalled):
        assert error.why == "no output for 30m"
    assert "failed (claude was stopped: no output for 30m)" in decided.said[0]


def test_a_stop_after_the_result_keeps_the_result_and_counts_the_work_still_running() -> None:
    watched = replace(
        ENDED_WELL,
        cli_exit=CliExit(code=None, signal=signal.SIGTERM),
        fired=Fired("after_result", "still running 1m after its result"),
    )

    decided = verdict(watched, reader_of(init(), task_started(), result()), RAN)

    assert decided.error is None
    assert decided.ended is not None
    assert decided.ended.killed == ("Run the tests",)
    assert decided.ended.final_message == "done"
    assert decided.said[1] == (
        "k: claude was still running 1m after its result; stopped it, the result stands"
    )


def test_a_budget_watchdogs_stop_is_budget_exhausted_counting_the_usage() -> None:
    spending = Spending(Budget(turns=1))
    watched = replace(
        ENDED_WELL,
        cli_exit=CliExit(code=None, signal=signal.SIGTERM),
        fired=Fired("budget", "the budget is spent (turns 2 of 1)"),
    )

    error = failure_of(
        verdict(watched, reader_of(init(), result()), replace(RAN, spending=spending))
    )

    assert isinstance(error, BudgetExhausted)
    assert str(error) == "claude was stopped: the budget is spent (turns 2 of 1)"
    assert error.limit == Budget(turns=1)
    assert error.spent.turns == 2


def test_a_budget_found_crossed_only_at_the_end_is_budget_exhausted_too() -> None:
    spending = Spending(Budget(turns=1))
    spending.add(Usage(turns=1))  # what the calls before spent

    error = failure_of(
        verdict(ENDED_WELL, reader_of(init(), result()), replace(RAN, spending=spending))
    )

    assert isinstance(error, BudgetExhausted)
    assert str(error) == "claude spent the budget (turns 3 of 1)"  # 1 before, 2 its own
    assert error.spent.turns == 3


def test_an_interrupt_or_a_cancel_raises_interrupted_with_what_the_stream_said() -> None:
    watched = replace(ENDED_WELL, interrupted=True, cli_exit=CliExit(None, signal.SIGTERM))

    decided = verdict(watched, reader_of(init(), result()), RAN)

    error = failure_of(decided)
    assert isinstance(error, Interrupted)
    assert error.session_id == SESSION
    assert error.final_message == "done"
    assert error.containment == "scan"
    (said,) = decided.said
    assert said.startswith("k: session stopped after 3s, as asked")
    assert said.endswith(", as asked (an interrupt or a cancel); nothing of it is left running")


def test_a_protocol_violation_a_spawn_error_and_a_log_error_each_fail() -> None:
    reader = reader_of(init(), result())
    violated = failure_of(verdict(replace(ENDED_WELL, violation="bad"), reader, RAN))
    unstarted = failure_of(verdict(replace(ENDED_WELL, spawn_error="No such file"), reader, RAN))
    full = OSError(errno.ENOSPC, "No space left on device")
    unwritten = failure_of(verdict(replace(ENDED_WELL, log_error=full), reader, RAN))

    assert isinstance(violated, SessionFailed)
    assert str(violated).startswith("claude's supervisor protocol violated (bad)")
    assert str(unstarted) == "could not start /bin/claude: No such file"
    assert str(unwritten) == f"could not write {LOG}: No space left on device"
    assert unwritten.__cause__ is full


@pytest.mark.parametrize(
    ("change", "cut_short"),
    [
        ({}, False),
        ({"interrupted": True}, True),
        ({"violation": "a word out of turn"}, True),
        ({"spawn_error": "No such file"}, True),
        ({"log_error": OSError(errno.ENOSPC, "No space left on device")}, True),
        ({"cli_exit": CliExit(code=3, signal=None)}, False),
    ],
)
def test_what_the_watch_saw_is_cut_short_when_the_cli_could_not_end_by_itself(
    change: dict[str, object], cut_short: bool
) -> None:
    # The adapter reads what the CLI left (exit code, state files of killed work) only otherwise.
    assert replace(ENDED_WELL, **change).cut_short is cut_short  # type: ignore[arg-type]


def test_a_session_stopped_mid_call_counts_every_turn_its_stream_showed() -> None:
    # Stopped in its fourth turn by a Budget of $0.001: three results said 6 turns and $0.00105,
    # and the fourth turn had started (one assistant message, 10 in and 5 out).
    lines = transcript_lines("claude-five-turns")
    fourth_turns_first_message = [
        index for index, line in enumerate(lines) if '"type":"assistant"' in line
    ][6]
    reader = reader_of(*lines[: fourth_turns_first_message + 1])
    spending = Spending(Budget(usd=0.001))
    watched = replace(
        ENDED_WELL,
        cli_exit=CliExit(code=None, signal=signal.SIGTERM),
        fired=Fired("budget", "the budget is spent (usd 0.00105 of 0.001)"),
    )

    error = failure_of(verdict(watched, reader, replace(RAN, spending=spending)))

    assert isinstance(error, BudgetExhausted)
    assert error.usage is not None
    assert (error.usage.turns, error.usage.cost_usd) == (7, 0.00105)
    assert (error.usage.input_tokens, error.usage.output_tokens) == (70, 35)
    assert error.spent == error.usage  # nothing was spent before
