"""The Budget on the REAL claude and codex, under the fake model: what each stream says as it
goes crosses the limit, the session is stopped with the whole-tree stop, and BudgetExhausted
keeps its log and record. Claude says each model turn as it comes; Codex says its tokens only
at ``turn.completed``, so a ``codex exec`` crosses as its one turn ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from thirdshift import Budget, BudgetExhausted, Logs, Sessions, choice, claude, codex
from thirdshift._budget import spent_tokens
from thirdshift.testing._tokens import INPUT_TOKENS, OUTPUT_TOKENS
from thirdshift.testing.fakemodel import FakeModel, ScriptedModel
from thirdshift.testing.steps import background, run, say


def worktree_in(tmp_path: Path) -> Path:
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    return worktree


@pytest.mark.real_cli("claude")
@pytest.mark.thirdshift(assert_all_consumed=False)  # stopped before its second turn is asked
def test_real_claude_is_stopped_as_its_first_turn_reaches_a_one_turn_budget(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    # The first turn starts a command that would run for minutes: the stop comes while it runs.
    fake_model.claude.script(run("sleep 120"), say("never said"))
    lines: list[str] = []

    with (
        pytest.raises(BudgetExhausted) as raised,
        Sessions.within(
            Logs(tmp_path / "logs", "repo"),
            worktree_in(tmp_path),
            claude(),
            progress=lines.append,
            budget=Budget(turns=1),
        ) as sessions,
    ):
        sessions.run("implement", "Sleep.")

    assert str(raised.value) == "claude was stopped: the budget is spent (turns 1 of 1)"
    assert raised.value.spent.turns == 1
    assert raised.value.session_id is not None
    (record,) = sessions.records
    assert record.failure is raised.value
    assert record.log.read_bytes()  # the log keeps what claude said up to the stop
    assert len(fake_model.claude.scripted_requests()) == 1
    assert any("sleep 120" in line for line in lines), lines


@pytest.mark.real_cli("codex")
def test_real_codex_crossing_a_tokens_budget_at_its_turns_end_fails_as_budget_exhausted(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    fake_model.codex.script(run("echo hi"), say("done"))

    with (
        pytest.raises(BudgetExhausted) as raised,
        Sessions.within(
            Logs(tmp_path / "logs", "repo"),
            worktree_in(tmp_path),
            codex(),
            progress=lambda _: None,
            budget=Budget(tokens=1),
        ) as sessions,
    ):
        sessions.run("implement", "Say hi.")

    tokens = spent_tokens(raised.value.spent)
    assert tokens is not None
    assert tokens >= 1
    # Stopped at turn.completed, or read only as codex exited: the same crossing either way.
    assert str(raised.value) in (
        f"codex was stopped: the budget is spent (tokens {tokens} of 1)",
        f"codex spent the budget (tokens {tokens} of 1)",
    )
    assert raised.value.final_message == "done"
    (record,) = sessions.records
    assert record.usage == raised.value.spent


@pytest.mark.parametrize(
    "cli", [pytest.param(name, marks=pytest.mark.real_cli(name)) for name in ("codex", "qwen")]
)
def test_a_real_resumes_record_counts_only_the_requests_it_made(
    fake_model: FakeModel, tmp_path: Path, cli: str
) -> None:
    # Codex 0.171.0 and Qwen 0.24.4 count a Resume's tokens from the session's start; each
    # record must say what its own call asked the model, and the Budget add up each call once.
    side: ScriptedModel = getattr(fake_model, cli)
    side.script(background("sleep 300"), say("started"))
    side.script(run("true"), say("green"))

    with Sessions.within(
        Logs(tmp_path / "logs", "repo"), worktree_in(tmp_path), choice(cli), progress=print
    ) as sessions:
        sessions.run("implement", "Start the tests.")

    assert len(side.requests) == 4  # two a call, and no side request of Qwen's memory
    first, resumed = sessions.records
    assert resumed.kind == "implement-resume"
    for record in (first, resumed):
        assert record.usage is not None
        assert (record.usage.input_tokens, record.usage.output_tokens) == (
            2 * INPUT_TOKENS,
            2 * OUTPUT_TOKENS,
        ), record.kind
    assert sessions.spent.input_tokens == 4 * INPUT_TOKENS


@pytest.mark.real_cli("claude")
@pytest.mark.thirdshift(assert_all_consumed=False)  # stopped before its later turns are asked
def test_real_claude_is_stopped_at_the_result_whose_cost_crosses_a_usd_budget(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    # Each turn starts `sleep 1` in the background: it finishes in Claude's grace, and Claude
    # takes a turn of its own to read its notification. Each result says the call's cost so
    # far ($0.00035 a turn of two requests under the fake model): the third crosses $0.001.
    for turn in range(1, 5):
        fake_model.claude.script(background("sleep 1"), say(f"turn {turn}"))
    fake_model.claude.script(say("turn 5"))

    with (
        pytest.raises(BudgetExhausted) as raised,
        Sessions.within(
            Logs(tmp_path / "logs", "repo"),
            worktree_in(tmp_path),
            claude(),
            progress=lambda _: None,
            budget=Budget(usd=0.001),
        ) as sessions,
    ):
        sessions.run("implement", "Start sleep 1 in the background each turn.")

    assert str(raised.value) == "claude was stopped: the budget is spent (usd 0.00105 of 0.001)"
    spent = sessions.spent
    assert spent.cost_usd == 0.00105
    # Every turn the stream showed: three results' (2 requests each), and a fourth turn's
    # first message if it came before the stop did.
    assert spent.turns in (6, 7)
    assert raised.value.final_message == "turn 3"
    (record,) = sessions.records
    assert record.usage == spent
