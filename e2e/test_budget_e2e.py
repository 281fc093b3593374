"""The Budget on real processes (the fake CLIs): a session whose stream crosses it is stopped
with the whole-tree stop and raises BudgetExhausted, its log and record kept; what the
sessions before it spent counts; what a stream says only at its end is checked at its end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sessionkit import assert_logged_exactly, log_of

from pytest_thirdshift import FakeCLIs
from thirdshift import (
    Budget,
    BudgetExhausted,
    Ended,
    Logs,
    Sessions,
    Usage,
    choice,
    claude,
    codex,
)
from thirdshift._record_files import read_record
from thirdshift.testing import fakecli as fake
from thirdshift.testing import steps
from thirdshift.testing.conformance._others import BUILT_IN
from thirdshift.testing.fakecli import _steps as cli_steps

THIRDSHIFT = str(Path(sys.executable).with_name("thirdshift"))


def assistant(message_id: str, tokens_in: int, tokens_out: int = 1) -> dict[str, Any]:
    """A Claude assistant line: one text block, with its message's usage at its start."""
    return {
        "type": "assistant",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": "working"}],
            "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
        },
        "parent_tool_use_id": None,
        "session_id": "fake-session-1",
    }


def turn_completed(tokens_in: int, tokens_out: int) -> dict[str, Any]:
    return {
        "type": "turn.completed",
        "usage": {"input_tokens": tokens_in, "cached_input_tokens": 0, "output_tokens": tokens_out},
    }


def test_a_claude_session_whose_messages_cross_the_tokens_budget_is_stopped(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(
        cli_steps.emit(assistant("m1", 600)), cli_steps.emit(assistant("m2", 600)), steps.hang()
    )
    logs = Logs(tmp_path / "logs", "repo")
    lines: list[str] = []
    budget = Budget(tokens=1000)

    with (
        pytest.raises(BudgetExhausted) as raised,
        Sessions.within(logs, tmp_path, claude(), progress=lines.append, budget=budget) as sessions,
    ):
        sessions.run("implement", "go")

    assert str(raised.value) == "claude was stopped: the budget is spent (tokens 1202 of 1000)"
    # The fake's init names its model, and no API key in the environment: a login.
    spent = Usage(
        turns=2,
        input_tokens=1200,
        output_tokens=2,
        models=("claude-opus-4-8[1m]",),
        billing="subscription",
    )
    assert (raised.value.spent, raised.value.limit) == (spent, budget)
    assert raised.value.retryable is False
    (call,) = fake_cli_on_path.claude.calls
    assert call.signals == ["SIGTERM"]  # Claude's stop signal: the whole-tree stop
    log = log_of(tmp_path / "logs", "implement")
    assert_logged_exactly(log, call)
    (record,) = sessions.records
    assert record.failure is raised.value
    assert record.usage == spent
    written = read_record(log)
    assert written is not None
    assert written["failure"]["type"] == "BudgetExhausted"
    assert sessions.spent == spent
    (ended,) = [line for line in lines if "session ended after" in line]
    assert ended.endswith("failed (claude was stopped: the budget is spent (tokens 1202 of 1000))")


def test_what_the_sessions_before_spent_counts_toward_the_stop(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.codex.script(steps.say("first"), cli_steps.emit(turn_completed(500, 100)))
    fake_cli_on_path.codex.script(cli_steps.emit(turn_completed(300, 200)), steps.hang())
    logs = Logs(tmp_path / "logs", "repo")

    with (
        pytest.raises(BudgetExhausted) as raised,
        Sessions.within(
            logs, tmp_path, codex(), progress=lambda _: None, budget=Budget(tokens=1000)
        ) as sessions,
    ):
        sessions.run("implement", "go")
        sessions.run("review", "look")

    # The fake ends each turn with its own turn.completed too, of its one model request (10
    # and 5 tokens). So the first session spent 510 + 105, and the second crossed at 300 + 200.
    assert str(raised.value) == "codex was stopped: the budget is spent (tokens 1115 of 1000)"
    assert raised.value.spent == Usage(
        turns=3, input_tokens=810, output_tokens=305, cached_input_tokens=0, subagents="unknown"
    )
    first, second = fake_cli_on_path.codex.calls
    assert first.signals == []
    assert second.signals == ["SIGINT"]  # Codex's first stop signal
    assert [record.kind for record in sessions.records] == ["implement", "review"]


def test_a_crossing_said_as_the_cli_exits_fails_the_session_all_the_same(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # The fake's own turn.completed, its last line, says 10 + 5 tokens; codex exits at once.
    fake_cli_on_path.codex.script(steps.say("done"))
    logs = Logs(tmp_path / "logs", "repo")

    with (
        pytest.raises(BudgetExhausted) as raised,
        Sessions.within(
            logs, tmp_path, codex(), progress=lambda _: None, budget=Budget(tokens=12)
        ) as sessions,
    ):
        sessions.run("implement", "go")

    # Whether the stop came before codex exited or not, the same crossing, the same failure.
    assert str(raised.value) in (
        "codex was stopped: the budget is spent (tokens 15 of 12)",
        "codex spent the budget (tokens 15 of 12)",
    )
    assert raised.value.final_message == "done"
    assert sessions.spent == Usage(
        turns=1, input_tokens=10, output_tokens=5, cached_input_tokens=0, subagents="unknown"
    )


def test_claudes_cost_is_checked_at_its_result_and_no_later_session_starts(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.say("done"))
    logs = Logs(tmp_path / "logs", "repo")

    with Sessions.within(
        logs, tmp_path, claude(), progress=lambda _: None, budget=Budget(usd=0.0001)
    ) as sessions:
        with pytest.raises(BudgetExhausted) as raised:
            sessions.run("implement", "go")
        with pytest.raises(BudgetExhausted, match=r"^review: not started, as the budget is spent"):
            sessions.run("review", "look")

    # The result says the call's cost ($0.000235): stopped there, or read as claude exited.
    assert str(raised.value) in (
        "claude was stopped: the budget is spent (usd 0.000235 of 0.0001)",
        "claude spent the budget (usd 0.000235 of 0.0001)",
    )
    assert raised.value.final_message == "done"  # what it did is kept all the same
    assert len(fake_cli_on_path.claude.calls) == 1
    assert sessions.spent.cost_usd == 0.000235


def test_thirdshift_run_stops_a_session_over_its_budget_and_says_so_in_json(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(
        cli_steps.emit(assistant("m1", 600)), cli_steps.emit(assistant("m2", 600)), steps.hang()
    )
    args = ("--logs", str(tmp_path / "logs"), "--budget-tokens", "1000", "--json", "go")
    done = subprocess.run(
        [THIRDSHIFT, "run", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 1, done.stderr
    message = "claude was stopped: the budget is spent (tokens 1202 of 1000)"
    assert f"thirdshift: BudgetExhausted, not retryable: {message}\n" in done.stderr
    out = json.loads(done.stdout)
    assert (out["failure"]["type"], out["failure"]["message"]) == ("BudgetExhausted", message)
    (record,) = out["records"]
    assert record["failure"]["type"] == "BudgetExhausted"
    assert Path(record["log"]).exists()


@pytest.mark.parametrize("cli", BUILT_IN)
def test_a_resumes_record_counts_its_own_tokens_and_the_budget_each_call_once(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, cli: str
) -> None:
    # Both calls ask the model twice. The fake Codex and Qwen, as the real ones, count the
    # Resume's tokens from the session's start; the adapter tells the reader what came before.
    fakes = getattr(fake_cli_on_path, cli)
    fakes.script(steps.background("sleep 300"), steps.say("started"))
    fakes.script(steps.run("true"), steps.say("green"))

    with Sessions.within(
        Logs(tmp_path / "logs", "repo"), tmp_path, choice(cli), progress=lambda _: None
    ) as sessions:
        sessions.run("implement", "go")

    first, resumed = sessions.records
    assert resumed.kind == "implement-resume"
    assert first.usage is not None
    assert resumed.usage is not None
    assert first.usage.input_tokens is not None
    assert (resumed.usage.input_tokens, resumed.usage.output_tokens) == (
        first.usage.input_tokens,
        first.usage.output_tokens,
    )
    assert sessions.spent.input_tokens == 2 * first.usage.input_tokens


@pytest.mark.parametrize("cli", BUILT_IN)
def test_a_session_continued_in_a_later_block_told_of_the_earlier_counts_its_own_call(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, cli: str
) -> None:
    # As a Temporal attempt continues the last attempt's session by id, in another process: the
    # adapter has not seen the earlier call, so only `earlier` can tell Codex's and Qwen's reader
    # what their session totals already hold, and the Budget what was spent.
    fakes = getattr(fake_cli_on_path, cli)
    fakes.script(steps.run("true"), steps.say("first"))
    fakes.script(steps.run("true"), steps.say("again"))
    logs = Logs(tmp_path / "logs", "repo")
    with Sessions.within(logs, tmp_path, choice(cli), progress=lambda _: None) as sessions:
        sessions.run("implement", "go")
    (first,) = sessions.records
    assert first.session_id is not None
    assert first.usage is not None

    earlier = [Ended(first.session_id, usage=first.usage)]
    with Sessions.within(
        logs, tmp_path, choice(cli), progress=lambda _: None, earlier=earlier
    ) as sessions:
        sessions.run_to_final_message("implement-continued", "go on", resume=first.session_id)

    (continued,) = sessions.records
    assert continued.session_id == first.session_id
    assert continued.usage is not None
    assert (continued.usage.input_tokens, continued.usage.output_tokens) == (
        first.usage.input_tokens,
        first.usage.output_tokens,
    )
    assert sessions.spent.input_tokens == 2 * (first.usage.input_tokens or 0)


def test_sessions_an_earlier_block_ran_must_be_told_as_ended_values(tmp_path: Path) -> None:
    logs = Logs(tmp_path / "logs", "repo")
    for earlier, says in (
        ("s-1", "a sequence of thirdshift.Ended"),
        ([{"session_id": "s-1"}], "only thirdshift.Ended values"),
    ):
        with (
            pytest.raises(TypeError, match=says),
            Sessions.within(logs, tmp_path, claude(), earlier=earlier),  # type: ignore[arg-type]
        ):
            pass


def turn_result(turn: int) -> dict[str, Any]:
    """The result of a call's ``turn``-th turn, as Claude 2.1.197 prints it: its ``usage`` and
    ``num_turns`` that turn's, its ``total_cost_usd`` and ``modelUsage`` the call's so far
    (``tests/transcripts/claude-five-turns``); $0.01 a turn."""
    so_far = {"inputTokens": 10 * turn, "outputTokens": 5 * turn, "costUSD": 0.01 * turn}
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "num_turns": 1,
        "result": f"turn {turn}",
        "session_id": "fake-session-1",
        "total_cost_usd": round(0.01 * turn, 2),
        "usage": {"input_tokens": 10, "output_tokens": 5},
        "modelUsage": {"claude-opus-4-8[1m]": so_far},
        "parent_tool_use_id": None,
    }


def test_a_claude_call_of_five_turns_is_stopped_at_the_result_that_crosses_a_usd_budget(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # Five turns of $0.01 in one call, a Budget of $0.025: the third turn's result ($0.03)
    # crosses it. Before, the cost was checked only as the call ended, and all five ran.
    script = [
        step for turn in range(1, 6) for step in (cli_steps.emit(turn_result(turn)), fake.sleep(1))
    ]
    fake_cli_on_path.claude.script(*script, steps.hang())

    with (
        pytest.raises(BudgetExhausted) as raised,
        Sessions.within(
            Logs(tmp_path / "logs", "repo"),
            tmp_path,
            claude(),
            progress=lambda _: None,
            budget=Budget(usd=0.025),
        ) as sessions,
    ):
        sessions.run("implement", "go")

    assert str(raised.value) == "claude was stopped: the budget is spent (usd 0.03 of 0.025)"
    assert raised.value.final_message == "turn 3"
    # Every turn the stream showed, not its first result's alone.
    assert (sessions.spent.turns, sessions.spent.cost_usd) == (3, 0.03)
    assert (sessions.spent.input_tokens, sessions.spent.output_tokens) == (30, 15)
