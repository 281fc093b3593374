"""What a ``within`` block may spend, across all its sessions, as a value.

A value of the bottom layer: the limits, their check, and which one a :class:`Usage` crosses.
Where each measure is checked (while the session runs, or only at its end, per Harness) is the
adapter's and the Harnesses' business; the README has the table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from thirdshift.outside import Usage


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


def spent_tokens(usage: Usage) -> int | None:
    """Input plus output tokens as the stream said; ``None`` where it said neither."""
    if usage.input_tokens is None and usage.output_tokens is None:
        return None
    return (usage.input_tokens or 0) + (usage.output_tokens or 0)
