"""What a session used, read from its stream, and how the "session ended" line shows it.

Token counts mean the same for both CLIs: ``input_tokens`` is every input token the model
read, cached or not, and ``cached_input_tokens`` the part of it read from the cache. Codex
reports them so; Claude reports uncached, cache-written and cache-read input apart, and they
are added up here.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, TypeGuard

from thirdshift._values import Usage
from thirdshift.harness._lines import MAX_ID, MAX_TRACKED, shorten

# A stream names a handful of models; a hostile one could name millions.
MAX_MODELS = 16


def turns_text(turns: int) -> str:
    """``1 turn``, ``2 turns``."""
    return f"{turns} turn" if turns == 1 else f"{turns} turns"


def cost_text(cost: float) -> str:
    """A cost in dollars: cents from a cent up (``$1.23``), else two significant digits.

    ``$0.00024``, ``$0.0007``: a cheap session must not read as ``$0.00``. Exactly nothing is
    ``$0.00``.
    """
    if cost >= 0.01 or cost <= 0 or not math.isfinite(cost):
        return f"${cost:.2f}"
    exact = Decimal(repr(cost))  # as the CLI wrote it, so that 0.000235 rounds up
    places = Decimal(1).scaleb(exact.adjusted() - 1)  # two significant digits
    shown = format(exact.quantize(places, rounding=ROUND_HALF_UP), "f")
    return "$" + (shown.rstrip("0") if "." in shown else shown)


def count(value: object) -> TypeGuard[int]:
    """Whether ``value`` is a whole count (not a bool, not negative)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


TokenNames = tuple[str, str, str]
"""How a CLI's ``usage`` object names its input, cached input and output token counts."""


def without_earlier(usage: object, earlier: Usage | None, names: TokenNames) -> object:
    """A ``usage`` object of session totals with the tokens ``earlier`` calls used taken off:
    this call's own, each never below 0. Anything that is not a count is left as it is."""
    if not isinstance(usage, dict) or earlier is None:
        return usage
    before = dict(
        zip(
            names,
            (earlier.input_tokens, earlier.cached_input_tokens, earlier.output_tokens),
            strict=True,
        )
    )
    return {
        name: max(0, value - (before.get(name) or 0)) if count(value) else value
        for name, value in usage.items()
    }


def dollars(value: object) -> float | None:
    """A cost figure from the stream as a float; None for anything that is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        cost = float(value)
    except OverflowError:  # an int too large for a float is no cost figure
        return None
    return cost if math.isfinite(cost) and cost >= 0 else None


def models_named(*names: object) -> tuple[str, ...]:
    """The distinct model names among ``names``, in order, each shortened, at most a few."""
    found: list[str] = []
    for name in names:
        if isinstance(name, str) and name:
            shown = shorten(name)
            if shown not in found:
                found.append(shown)
                if len(found) == MAX_MODELS:
                    break
    return tuple(found)


def claude_usage(result: dict[str, Any], model: str | None) -> Usage:
    """The usage a Claude top-level ``result`` reports; ``model`` is the init's.

    The models are the init's, then those of ``modelUsage`` (which names subagents' too).
    """
    turns = result.get("num_turns")
    tokens = result.get("usage")
    if not isinstance(tokens, dict):
        tokens = {}
    fresh, written, read, out = (
        tokens.get("input_tokens"),
        tokens.get("cache_creation_input_tokens"),
        tokens.get("cache_read_input_tokens"),
        tokens.get("output_tokens"),
    )
    cached = read if count(read) else 0
    by_model = result.get("modelUsage")
    return Usage(
        turns=turns if count(turns) else None,
        input_tokens=fresh + (written if count(written) else 0) + cached if count(fresh) else None,
        output_tokens=out if count(out) else None,
        cached_input_tokens=cached if count(fresh) else None,
        cost_usd=dollars(result.get("total_cost_usd")),
        models=models_named(model, *(by_model if isinstance(by_model, dict) else ())),
    )


class CodexUsage:
    """Adds up the ``usage`` of each ``turn.completed`` of a Codex stream."""

    def __init__(self) -> None:
        self._turns = 0
        self._input = 0
        self._cached = 0
        self._output = 0

    def add(self, usage: object) -> None:
        """Count one completed turn's ``usage``, if it has whole input and output counts.

        The rule of the reader's summary (which also takes negative counts), so that a session
        has usage when its "session ended" line shows tokens. A cached count that is not whole
        counts as 0.
        """
        if not isinstance(usage, dict):
            return
        tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
        if count(tokens_in) and count(tokens_out):
            self._turns += 1
            self._input += tokens_in
            self._output += tokens_out
            self._cached += _or_zero(usage.get("cached_input_tokens"))

    def total(self) -> Usage | None:
        """The usage of the turns counted; None if none was. Codex gives no cost."""
        if self._turns == 0:
            return None
        return Usage(
            turns=self._turns,
            input_tokens=self._input,
            output_tokens=self._output,
            cached_input_tokens=self._cached,
        )


def _or_zero(value: object) -> int:
    return value if count(value) else 0


class MessageUsage:
    """Adds up the ``usage`` of each assistant message of a Claude stream, as the stream goes.

    Claude prints one line per content block, each with its message's ``id`` and ``usage``
    (the same for every line of a message, as counted at the message's start: its input in
    full, its output only as far as the first block). So each message counts once, with the
    latest usage seen for it. Each message is a model turn. The ids remembered are bounded:
    an id forgotten and seen again counts again.
    """

    def __init__(self) -> None:
        self._by_id: dict[str, tuple[int, int]] = {}  # message id -> (input, output)
        self._turns = 0
        self._input = 0
        self._output = 0

    def see(self, message: object) -> None:
        """Count one assistant ``message`` (a dict with ``id`` and ``usage``), if it has both."""
        if not isinstance(message, dict):
            return
        message_id, usage = message.get("id"), message.get("usage")
        if not isinstance(message_id, str) or not isinstance(usage, dict):
            return
        fresh = usage.get("input_tokens")
        if not count(fresh):
            return
        counts = (
            fresh
            + _or_zero(usage.get("cache_creation_input_tokens"))
            + _or_zero(usage.get("cache_read_input_tokens")),
            _or_zero(usage.get("output_tokens")),
        )
        message_id = message_id[:MAX_ID]
        known = self._by_id.pop(message_id, None)
        if known is None:
            self._turns += 1
            known = (0, 0)
            if len(self._by_id) >= MAX_TRACKED:
                del self._by_id[next(iter(self._by_id))]  # the oldest: its lines are long past
        self._input += counts[0] - known[0]
        self._output += counts[1] - known[1]
        self._by_id[message_id] = counts

    def total(self) -> Usage | None:
        """The turns and tokens of the messages counted; None if none was."""
        if self._turns == 0:
            return None
        return Usage(turns=self._turns, input_tokens=self._input, output_tokens=self._output)
