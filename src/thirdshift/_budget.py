"""What a ``within`` block may spend, across all its sessions, and what it has spent.

Values of the bottom layer: the limits (:class:`Budget`) and which one a :class:`Usage` crosses;
what the sessions spent together (:class:`Spending`, shared by the rules and the adapter); and
which measures a Harness's stream lets be checked, and when (:class:`BudgetChecks`;
docs/watchdogs-and-budgets.md has the table).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from thirdshift._values import Ended, Usage

Measure = Literal["usd", "tokens", "turns"]


def _checked_limit(name: str, value: object, *, whole: bool) -> None:
    if value is None:
        return
    number_types: tuple[type, ...] = (int,) if whole else (int, float)
    # bool is an int to Python but never a limit a user meant.
    if isinstance(value, bool) or not isinstance(value, number_types):
        kind = "a whole number" if whole else "a number"
        raise ValueError(f"Budget {name} must be None or {kind}, not {value!r}")
    assert isinstance(value, int | float)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"Budget {name} must be positive and finite, not {value!r}")


@dataclass(frozen=True)
class Budget:
    """Limits on what the sessions of one ``within`` block may spend together.

    ``usd`` is dollars as the stream reports cost, ``tokens`` is input plus output tokens,
    ``turns`` is model turns; ``None`` leaves that measure unlimited. Each is positive and
    finite (a ``ValueError`` otherwise).
    """

    usd: float | None = None
    tokens: int | None = None
    turns: int | None = None

    def __post_init__(self) -> None:
        _checked_limit("usd", self.usd, whole=False)
        _checked_limit("tokens", self.tokens, whole=True)
        _checked_limit("turns", self.turns, whole=True)

    @property
    def limits_anything(self) -> bool:
        """Whether any measure has a limit (``Budget()`` has none: nothing to check)."""
        return (self.usd, self.tokens, self.turns) != (None, None, None)

    def crossed_by(self, spent: Usage) -> str | None:
        """The first limit ``spent`` reaches or passes, in words (``"turns 3 of 3"``), or
        ``None`` while every limit still has room."""
        tokens = spent_tokens(spent)
        if self.usd is not None and spent.cost_usd is not None and spent.cost_usd >= self.usd:
            return f"usd {spent.cost_usd:.4g} of {self.usd:g}"
        if self.tokens is not None and tokens is not None and tokens >= self.tokens:
            return f"tokens {tokens} of {self.tokens}"
        if self.turns is not None and spent.turns is not None and spent.turns >= self.turns:
            return f"turns {spent.turns} of {self.turns}"
        return None


@dataclass(frozen=True)
class BudgetChecks:
    """Which Budget measures a Harness's stream says while the session runs, and which only
    at its end. A measure in neither is one the stream never says: budgeting by it is refused.

    A Harness declares its own as ``budget_checks``; a subclass of ``Harness`` that does not
    gets the default: tokens and turns at the end only.
    """

    while_running: frozenset[Measure] = frozenset()
    at_end: frozenset[Measure] = frozenset({"tokens", "turns"})

    def refusal(self, budget: Budget, cli: str) -> str | None:
        """Why ``budget`` cannot be kept on ``cli``'s sessions, in words; ``None`` if it can."""
        said = self.while_running | self.at_end
        unsaid = [
            name
            for name, limit in (
                ("usd", budget.usd),
                ("tokens", budget.tokens),
                ("turns", budget.turns),
            )
            if limit is not None and name not in said
        ]
        if not unsaid:
            return None
        by = "tokens" if "tokens" in said else "a measure it reports"
        return (
            f"a Budget by {' and '.join(unsaid)} cannot be kept on {cli}: its stream never "
            f"reports {' or '.join(unsaid)}, so the cap would cap nothing; budget by {by} instead"
        )


def spent_tokens(usage: Usage) -> int | None:
    """Input plus output tokens as the stream said; ``None`` where it said neither."""
    if usage.input_tokens is None and usage.output_tokens is None:
        return None
    return (usage.input_tokens or 0) + (usage.output_tokens or 0)


def _sum(a: int | None, b: int | None) -> int | None:
    return a if b is None else b if a is None else a + b


def plus(a: Usage, b: Usage | None) -> Usage:
    """What ``a`` and ``b`` used together: each measure summed where either said it.

    A measure neither said stays ``None``; one only one said is that one's. The billing is
    the one both said, ``None`` if they said two; sub-agents are ``unknown`` if either's were.
    """
    if b is None:
        return a
    cost = b.cost_usd if a.cost_usd is None else a.cost_usd + (b.cost_usd or 0.0)
    # Paid two ways, the whole was paid neither way alone.
    both = a.billing is not None and b.billing is not None and a.billing != b.billing
    billing = None if both else a.billing or b.billing
    subagents = "unknown" if "unknown" in (a.subagents, b.subagents) else a.subagents or b.subagents
    return Usage(
        turns=_sum(a.turns, b.turns),
        input_tokens=_sum(a.input_tokens, b.input_tokens),
        output_tokens=_sum(a.output_tokens, b.output_tokens),
        cached_input_tokens=_sum(a.cached_input_tokens, b.cached_input_tokens),
        cost_usd=cost,
        models=a.models + tuple(model for model in b.models if model not in a.models),
        billing=billing,
        subagents=subagents,
    )


class Spending:
    """What the sessions of one ``within`` block have spent so far, against its Budget.

    Shared by the rules, which add each session's usage as it ends, and the adapter, which
    checks what the running session's stream has said on top of it. Thread-safe.

    ``earlier`` are sessions run for the same work before the block, in another process (an
    earlier attempt of a Temporal activity): what they used counts first, and
    :attr:`earlier_calls` tells the adapter what each CLI session's calls used there.
    """

    def __init__(self, budget: Budget, earlier: Sequence[Ended] = ()) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        self._spent = Usage()
        calls: dict[str, Usage] = {}
        for ended in earlier:
            self._spent = plus(self._spent, ended.usage)
            if ended.session_id is not None and ended.usage is not None:
                calls[ended.session_id] = plus(calls.get(ended.session_id, Usage()), ended.usage)
        self.earlier_calls: Mapping[str, Usage] = calls

    @property
    def spent(self) -> Usage:
        """What every session that ended has used, added up."""
        with self._lock:
            return self._spent

    def add(self, usage: Usage | None) -> None:
        """Count one ended session's usage."""
        with self._lock:
            self._spent = plus(self._spent, usage)

    def crossed_with(self, running: Usage | None) -> str | None:
        """The limit that what was spent plus ``running`` (a session's so far) reaches, in
        words; ``None`` while there is room."""
        return self.budget.crossed_by(plus(self.spent, running))
