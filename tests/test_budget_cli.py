"""``thirdshift run --budget-usd/--budget-tokens/--budget-turns``, in-process on a
ScriptedOutside: bad values are one line and exit 2; the Budget reaches the rules."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from thirdshift import Budget, BudgetExhausted, Usage
from thirdshift._cli import main
from thirdshift.testing import ScriptedOutside, default_outside


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOutside]:
    monkeypatch.chdir(tmp_path)
    outside = ScriptedOutside()
    with default_outside(outside):
        yield outside


def run(tmp_path: Path, *args: str) -> int:
    return main(["run", "--logs", str(tmp_path / "logs"), *args])


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--budget-usd", "0"], "--budget-usd must be positive and finite, not 0.0"),
        (["--budget-usd", "inf"], "--budget-usd must be positive and finite, not inf"),
        (["--budget-usd", "five"], "--budget-usd must be a number, not 'five'"),
        (["--budget-tokens", "1.5"], "--budget-tokens must be a whole number, not '1.5'"),
        (["--budget-tokens", "-3"], "--budget-tokens must be positive and finite, not -3"),
        (["--budget-turns", "many"], "--budget-turns must be a whole number, not 'many'"),
        (
            ["--harness", "codex", "--budget-usd", "2"],
            "a Budget by usd cannot be kept on codex: its stream never reports usd, so the "
            "cap would cap nothing; budget by tokens instead",
        ),
    ],
)
def test_a_budget_that_cannot_be_kept_is_one_line_and_exit_2(
    scripted: ScriptedOutside,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    line: str,
) -> None:
    assert run(tmp_path, *args, "go") == 2
    assert capsys.readouterr().err == f"thirdshift: {line}\n"
    assert scripted.sessions == []


def test_the_budget_flags_reach_the_rules(
    scripted: ScriptedOutside, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Spent by the first session: its killed work is not resumed, and the run carries on.
    scripted.ends(session_id="s1", killed=("make",), final_message="half", usage=Usage(turns=2))

    assert run(tmp_path, "--budget-turns", "2", "--budget-tokens", "9000", "go") == 0

    err = capsys.readouterr().err
    assert "not resuming it, as the budget is spent (turns 2 of 2); carrying on" in err
    assert [call.kind for call in scripted.sessions] == ["session"]


def test_a_session_stopped_by_the_budget_exits_1_and_json_names_it(
    scripted: ScriptedOutside, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stopped = BudgetExhausted(
        "claude was stopped: the budget is spent (usd 1.2 of 1)",
        spent=Usage(cost_usd=1.2),
        limit=Budget(usd=1.0),
        usage=Usage(cost_usd=1.2),
    )
    scripted.fails(stopped)

    assert run(tmp_path, "--budget-usd", "1", "--json", "go") == 1

    out = json.loads(capsys.readouterr().out)
    assert out["failure"]["type"] == "BudgetExhausted"
    assert out["failure"]["message"] == str(stopped)
    (record,) = out["records"]
    assert record["failure"]["type"] == "BudgetExhausted"
