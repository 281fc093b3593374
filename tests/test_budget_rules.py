"""The budget rules, in-process: what is spent is summed over every session of a ``within``
block, and once it is spent no Resume, continuation or new session starts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pytest_thirdshift import ScriptedOutside
from thirdshift import (
    Budget,
    BudgetExhausted,
    Logs,
    RateLimited,
    Sessions,
    Usage,
    claude,
    codex,
    gemini,
    opencode,
    qwen,
)
from thirdshift._budget import Spending, plus
from thirdshift.errors import ConfigurationError
from thirdshift.harness import Choice

NOW = datetime(2026, 12, 1, 4, 0, tzinfo=UTC)


@pytest.fixture
def logs(tmp_path: Path) -> Logs:
    return Logs(tmp_path / "logs", "repo")


def test_usages_add_up_measure_by_measure() -> None:
    first = Usage(turns=2, input_tokens=10, output_tokens=3, cost_usd=0.5, models=("a",))
    second = Usage(turns=1, output_tokens=4, cached_input_tokens=7, models=("a", "b"))
    assert plus(first, second) == Usage(
        turns=3,
        input_tokens=10,
        output_tokens=7,
        cached_input_tokens=7,
        cost_usd=0.5,
        models=("a", "b"),
    )
    assert plus(Usage(), None) == Usage()
    assert plus(Usage(), Usage()) == Usage()


def test_spent_is_summed_over_every_session_a_resume_included(
    scripted_outside: ScriptedOutside, logs: Logs, tmp_path: Path
) -> None:
    scripted_outside.ends(
        session_id="s1", killed=("cargo test",), usage=Usage(turns=2, input_tokens=100)
    ).ends(session_id="s1", usage=Usage(turns=1, input_tokens=50, cost_usd=0.25)).ends(
        session_id="s2", usage=Usage(turns=4, output_tokens=9, cost_usd=0.5)
    )
    with Sessions.within(logs, tmp_path, claude(), budget=Budget(turns=100)) as sessions:
        sessions.run("implement", "build it")
        sessions.run("review", "look at it")

    assert sessions.spent == Usage(turns=7, input_tokens=150, output_tokens=9, cost_usd=0.75)
    assert [call.kind for call in scripted_outside.sessions] == [
        "implement",
        "implement-resume",
        "review",
    ]


def test_once_the_budget_is_spent_killed_work_is_not_resumed_and_the_block_carries_on(
    scripted_outside: ScriptedOutside, logs: Logs, tmp_path: Path
) -> None:
    scripted_outside.ends(
        session_id="s1", killed=("cargo test",), final_message="waiting", usage=Usage(turns=3)
    )
    with Sessions.within(logs, tmp_path, claude(), budget=Budget(turns=3)) as sessions:
        assert sessions.run_to_final_message("implement", "build it") == "waiting"

    assert [call.kind for call in scripted_outside.sessions] == ["implement"]
    assert scripted_outside.progress[-1] == (
        "implement: the session ended with a background task still running (cargo test), "
        "which was killed; not resuming it, as the budget is spent (turns 3 of 3); carrying on"
    )
    assert len(sessions.endings) == 1


def test_once_the_budget_is_spent_a_limit_is_not_waited_out_to_continue(
    scripted_outside: ScriptedOutside, logs: Logs, tmp_path: Path
) -> None:
    limit = RateLimited(
        "claude exited 1: 429",
        retry_at=NOW + timedelta(minutes=1),
        session_id="s1",
        usage=Usage(input_tokens=600, output_tokens=400),
    )
    scripted_outside.fails(limit)
    with (
        pytest.raises(RateLimited) as raised,
        Sessions.within(
            logs, tmp_path, claude(), wait_for_limits=3600, budget=Budget(tokens=1000)
        ) as sessions,
    ):
        sessions.run("implement", "build it")

    assert raised.value is limit
    assert scripted_outside.waits == []
    assert scripted_outside.progress[-1] == (
        "implement: claude exited 1: 429; not waiting to continue it, as the budget is spent "
        "(tokens 1000 of 1000)"
    )


def test_a_limit_is_still_waited_out_while_the_budget_has_room(logs: Logs) -> None:
    limit = RateLimited("429", retry_at=NOW + timedelta(minutes=1), session_id="s1")
    outside = ScriptedOutside().fails(limit).ends(session_id="s1", final_message="done")
    sessions = Sessions(
        logs,
        outside,
        wait_for_limits=3600,
        clock=lambda: NOW,
        spending=Spending(Budget(tokens=1000)),
    )
    assert sessions.run_to_final_message("implement", "build it") == "done"
    assert [call.kind for call in outside.sessions] == ["implement", "implement-continued"]


def test_a_new_session_after_the_budget_is_spent_is_refused_without_starting(
    logs: Logs,
) -> None:
    outside = ScriptedOutside().ends(session_id="s1", usage=Usage(cost_usd=2.5))
    budget = Budget(usd=2.0)
    sessions = Sessions(logs, outside, spending=Spending(budget))
    sessions.run("implement", "build it")

    with pytest.raises(BudgetExhausted) as raised:
        sessions.run("review", "look at it")

    assert str(raised.value) == "review: not started, as the budget is spent (usd 2.5 of 2)"
    assert (raised.value.spent, raised.value.limit) == (Usage(cost_usd=2.5), budget)
    assert [call.kind for call in outside.sessions] == ["implement"]
    assert len(sessions.records) == 1


def test_a_failed_sessions_usage_counts_toward_the_budget(logs: Logs) -> None:
    stopped = BudgetExhausted("over", usage=Usage(turns=5), session_id="s1")
    outside = ScriptedOutside().fails(stopped)
    sessions = Sessions(logs, outside, spending=Spending(Budget(turns=5)))

    with pytest.raises(BudgetExhausted):
        sessions.run("implement", "build it")

    assert sessions.spent == Usage(turns=5)
    assert sessions.records[0].failure is stopped


@pytest.mark.parametrize("choice", [codex(), gemini(), qwen()], ids=lambda c: c.harness.name)
def test_a_usd_budget_on_a_harness_that_reports_no_cost_is_refused_at_within(
    scripted_outside: ScriptedOutside, logs: Logs, tmp_path: Path, choice: Choice
) -> None:
    with (
        pytest.raises(ConfigurationError, match="budget by tokens instead"),
        Sessions.within(logs, tmp_path, choice, budget=Budget(usd=1.0)),
    ):
        pass  # pragma: no cover - never entered
    assert scripted_outside.sessions == []


def test_a_turns_budget_on_gemini_which_counts_no_turns_is_refused(
    scripted_outside: ScriptedOutside, logs: Logs, tmp_path: Path
) -> None:
    with (
        pytest.raises(ConfigurationError, match="never reports turns"),
        Sessions.within(logs, tmp_path, gemini(), budget=Budget(turns=3)),
    ):
        pass  # pragma: no cover - never entered


@pytest.mark.parametrize("choice", [claude(), opencode()], ids=lambda c: c.harness.name)
def test_a_usd_budget_is_taken_where_the_stream_reports_cost(
    scripted_outside: ScriptedOutside, logs: Logs, tmp_path: Path, choice: Choice
) -> None:
    scripted_outside.ends(session_id="s1")
    with Sessions.within(logs, tmp_path, choice, budget=Budget(usd=1.0)) as sessions:
        sessions.run("implement", "build it")
    assert sessions.spent == Usage()


def test_a_budget_that_is_not_a_budget_is_refused(logs: Logs, tmp_path: Path) -> None:
    with (
        pytest.raises(TypeError, match=r"budget must be a thirdshift\.Budget"),
        Sessions.within(logs, tmp_path, claude(), budget=5),  # type: ignore[arg-type]
    ):
        pass  # pragma: no cover - never entered
