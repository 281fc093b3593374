"""The Budget value: its checks, and which limit a Usage crosses."""

from __future__ import annotations

import math

import pytest

from thirdshift import Budget, BudgetExhausted, Ended, SessionFailed, Usage
from thirdshift._budget import Spending


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("usd", 0),
        ("usd", -1.0),
        ("usd", math.inf),
        ("usd", math.nan),
        ("usd", "5"),
        ("tokens", 1.5),
        ("tokens", 0),
        ("turns", True),
        ("turns", -3),
    ],
)
def test_a_limit_that_is_not_a_positive_finite_number_is_refused(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"Budget {field} must be"):
        Budget(**{field: value})  # type: ignore[arg-type]


def test_no_limit_is_crossed_while_each_has_room() -> None:
    budget = Budget(usd=1.0, tokens=1000, turns=5)
    assert (
        budget.crossed_by(Usage(turns=4, input_tokens=500, output_tokens=499, cost_usd=0.99))
        is None
    )
    assert Budget().crossed_by(Usage(turns=10**6, cost_usd=10**6)) is None


def test_each_measure_is_crossed_on_reaching_its_limit() -> None:
    assert Budget(usd=1.0).crossed_by(Usage(cost_usd=1.0)) == "usd 1 of 1"
    assert Budget(tokens=10).crossed_by(Usage(input_tokens=4, output_tokens=6)) == "tokens 10 of 10"
    assert Budget(turns=3).crossed_by(Usage(turns=3)) == "turns 3 of 3"


def test_a_measure_the_stream_did_not_report_crosses_nothing() -> None:
    assert Budget(usd=0.01, tokens=1, turns=1).crossed_by(Usage()) is None


def test_budget_exhausted_is_a_session_failure_that_is_not_retried() -> None:
    error = BudgetExhausted("over budget", spent=Usage(turns=3), limit=Budget(turns=3))
    assert isinstance(error, SessionFailed)
    assert error.retryable is False
    assert (error.spent, error.limit) == (Usage(turns=3), Budget(turns=3))


def test_only_a_budget_with_a_limit_limits_anything() -> None:
    assert not Budget().limits_anything
    assert Budget(turns=1).limits_anything
    assert Budget(usd=0.5).limits_anything


def test_what_earlier_sessions_used_counts_first_and_is_kept_per_cli_session() -> None:
    earlier = (
        Ended("s-1", usage=Usage(turns=2, input_tokens=100)),
        Ended("s-1", usage=Usage(turns=1, input_tokens=50)),
        Ended("s-2", usage=Usage(turns=3)),
        Ended(None, usage=Usage(turns=1)),
        Ended("s-3"),
    )
    spending = Spending(Budget(turns=8), earlier)

    assert spending.spent == Usage(turns=7, input_tokens=150)
    assert spending.crossed_with(None) is None
    assert spending.crossed_with(Usage(turns=1)) == "turns 8 of 8"
    assert spending.earlier_calls == {
        "s-1": Usage(turns=3, input_tokens=150),
        "s-2": Usage(turns=3),
    }
