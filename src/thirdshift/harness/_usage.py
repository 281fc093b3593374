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


MAX_PLAIN_COST = 1_000_000
"""A cost this large or larger is shown by its power of ten (no session costs as much)."""


def turns_text(turns: int) -> str:
    """``1 turn``, ``2 turns``."""
    return f"{turns} turn" if turns == 1 else f"{turns} turns"


def cost_text(cost: float) -> str:
    """A cost in dollars: cents from a cent up (``$1.23``), else two significant digits.

    ``$0.00024``, ``$0.0007``: a cheap session must not read as ``$0.00``. Exactly nothing is
    ``$0.00``. From :data:`MAX_PLAIN_COST` up, three significant digits and the power of ten
    (``$1e+308``): a hostile figure must not make a line of hundreds of digits. A negative
    amount (which no stream's cost is read as, but a record may hold) reads ``-$5.00``.
    """
    if not math.isfinite(cost):
        return "$?"  # a sum past the largest float: no figure to show
    if cost < 0:
        return "-" + cost_text(-cost)
    if cost >= MAX_PLAIN_COST:
        return f"${cost:.3g}"
    if cost == 0:
        return "$0.00"  # -0.0 too
    if cost >= 0.01:
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

    The tokens are its ``modelUsage``'s, summed over the models, where it has one: that counts
    sub-agents, which its ``usage`` (the main agent's alone) leaves out; else its ``usage``'s.
    The models are the init's, then those of ``modelUsage``.
    """
    turns = result.get("num_turns")
    by_model = result.get("modelUsage")
    counted = _model_usage_tokens(by_model) if isinstance(by_model, dict) else None
    fresh, cached, out = counted or _usage_tokens(result.get("usage"))
    cost = dollars(result.get("total_cost_usd"))
    if cost is None and isinstance(by_model, dict):
        cost = _model_usage_cost(by_model)
    return Usage(
        turns=turns if count(turns) else None,
        input_tokens=fresh,
        output_tokens=out,
        cached_input_tokens=cached if fresh is not None else None,
        cost_usd=cost,
        models=models_named(model, *(by_model if isinstance(by_model, dict) else ())),
        subagents="unknown" if counted is None else "counted",
    )


Tokens = tuple[int | None, int | None, int | None]
"""Input (cached included), cached input and output tokens; ``None`` where not said."""


def _usage_tokens(usage: object) -> Tokens:
    """The tokens of a Claude ``usage`` object (one message's, or the main agent's turn)."""
    if not isinstance(usage, dict):
        return None, None, None
    fresh, written, read, out = (
        usage.get("input_tokens"),
        usage.get("cache_creation_input_tokens"),
        usage.get("cache_read_input_tokens"),
        usage.get("output_tokens"),
    )
    if not count(fresh):
        return None, None, out if count(out) else None
    cached = _or_zero(read)
    return fresh + _or_zero(written) + cached, cached, out if count(out) else None


def _model_usage_tokens(by_model: dict[Any, Any]) -> Tokens | None:
    """The tokens of a ``modelUsage`` (model name -> its figures), summed over its models;
    None where no model has a whole input count. ``{}``: nothing used yet, all 0."""
    fresh = cached = out = 0
    counted = not by_model
    for figures in list(by_model.values())[:MAX_TRACKED]:
        if not isinstance(figures, dict) or not count(figures.get("inputTokens")):
            continue
        counted = True
        read = _or_zero(figures.get("cacheReadInputTokens"))
        fresh += figures["inputTokens"] + _or_zero(figures.get("cacheCreationInputTokens")) + read
        cached += read
        out += _or_zero(figures.get("outputTokens"))
    return (fresh, cached, out) if counted else None


def _model_usage_cost(by_model: dict[Any, Any]) -> float | None:
    """The ``costUSD`` of a ``modelUsage``'s models, summed; None where none says one."""
    costs = [
        cost
        for figures in list(by_model.values())[:MAX_TRACKED]
        if isinstance(figures, dict) and (cost := dollars(figures.get("costUSD"))) is not None
    ]
    return sum(costs) if costs else None


class ClaudeCall:
    """What one ``claude -p`` call used: from its top-level results, and as its stream goes.

    A call prints a result per turn it takes (a background task that finishes brings it back
    for another). Each result's ``num_turns`` and ``usage`` are that turn's, while its
    ``total_cost_usd`` and ``modelUsage`` are the call's so far: on the real 2.1.197 under the
    fake model, five turns said 0.00035, 0.0007, 0.00105, 0.0014 and 0.001575, and ``modelUsage``
    grew with them. So the turns are every result's added up, the tokens and cost the latest
    result's (``modelUsage`` counts sub-agents, which ``usage`` leaves out).

    While a turn runs, the assistant messages shown since the last result are counted on top
    (each once, by its id: :class:`MessageUsage`), and so is each sub-agent's last message,
    which Claude never prints as an assistant line but hands back in the tool result that ends
    the sub-agent (``tool_use_result.usage``).
    """

    def __init__(self) -> None:
        self._results: Usage | None = None
        self._turns_used = Usage()  # each result's own usage, added up
        self._since = MessageUsage()

    def result(self, event: dict[str, Any], model: str | None) -> None:
        """Count one top-level result."""
        reported = claude_usage(event, model)
        self._turns_used = _added(self._turns_used, reported)
        before = self._results or Usage()
        # With no modelUsage (an older Claude), the results' own usage is all there is.
        call = reported if reported.subagents == "counted" else self._turns_used
        self._results = Usage(
            turns=self._turns_used.turns,
            input_tokens=call.input_tokens,
            output_tokens=call.output_tokens,
            cached_input_tokens=call.cached_input_tokens,
            cost_usd=reported.cost_usd if reported.cost_usd is not None else before.cost_usd,
            models=before.models
            + tuple(name for name in reported.models if name not in before.models),
            subagents=reported.subagents,
        )
        self._since = MessageUsage()

    def message(self, message: object) -> None:
        """Count one assistant message as it is shown (a sub-agent's too)."""
        self._since.see(message)

    def subagent_ended(self, usage: object) -> None:
        """Count a sub-agent's last message, from the tool result that hands back its answer."""
        self._since.add(usage)

    @property
    def results(self) -> Usage | None:
        """What the results said; None before the first."""
        return self._results

    @property
    def so_far(self) -> Usage | None:
        """What the results said, and what was shown since the last one; None before either.

        Its cost is the last result's: only a result says one."""
        since = self._since.total()
        if self._results is None:
            return since
        if since is None:
            return self._results
        return Usage(
            turns=(self._results.turns or 0) + (since.turns or 0),
            input_tokens=(self._results.input_tokens or 0) + (since.input_tokens or 0),
            output_tokens=(self._results.output_tokens or 0) + (since.output_tokens or 0),
            cached_input_tokens=self._results.cached_input_tokens,
            cost_usd=self._results.cost_usd,
            models=self._results.models,
            subagents=self._results.subagents,
        )


def _added(a: Usage, b: Usage) -> Usage:
    """``a``'s turns and tokens with ``b``'s added, each where either said it."""

    def sum_of(x: int | None, y: int | None) -> int | None:
        return x if y is None else y if x is None else x + y

    return Usage(
        turns=sum_of(a.turns, b.turns),
        input_tokens=sum_of(a.input_tokens, b.input_tokens),
        output_tokens=sum_of(a.output_tokens, b.output_tokens),
        cached_input_tokens=sum_of(a.cached_input_tokens, b.cached_input_tokens),
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
            subagents="unknown",  # exec --json omits delegated threads; see CodexHarness
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

    def add(self, usage: object) -> None:
        """Count one message that the stream does not show, by its ``usage`` alone."""
        fresh, _, out = _usage_tokens(usage)
        if fresh is None:
            return
        self._turns += 1
        self._input += fresh
        self._output += out or 0

    def total(self) -> Usage | None:
        """The turns and tokens of the messages counted; None if none was."""
        if self._turns == 0:
            return None
        return Usage(turns=self._turns, input_tokens=self._input, output_tokens=self._output)
