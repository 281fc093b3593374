"""What a session used, read from its stream, and how the "session ended" line shows it."""

from __future__ import annotations

from typing import Any

import pytest
from harness_helpers import WORKTREE, jsonl, read_all

from thirdshift import Usage
from thirdshift.harness import ClaudeReader, CodexReader
from thirdshift.harness._usage import MAX_MODELS, cost_text, turns_text


@pytest.mark.parametrize(
    ("cost", "shown"),
    [
        (0.0007, "$0.0007"),  # not $0.00
        (0.000235, "$0.00024"),  # rounded as written, half up
        (0.00047, "$0.00047"),
        (0.0099999, "$0.01"),
        (0.01, "$0.01"),
        (0.5, "$0.50"),
        (1.236, "$1.24"),
        (12, "$12.00"),
        (0, "$0.00"),  # exactly nothing
        (-0.0, "$0.00"),
        (1e-12, "$0.000000000001"),
        (999_999.99, "$999999.99"),
        # A hostile figure: a line of hundreds of digits before (#26 L8).
        (1_234_567, "$1.23e+06"),
        (1e308, "$1e+308"),
        (-5, "-$5.00"),
        (-1e308, "-$1e+308"),
        (float("inf"), "$?"),
        (float("nan"), "$?"),
    ],
)
def test_a_cost_shows_cents_or_two_significant_digits(cost: float, shown: str) -> None:
    assert cost_text(cost) == shown


@pytest.mark.parametrize(("turns", "shown"), [(0, "0 turns"), (1, "1 turn"), (2, "2 turns")])
def test_turns_are_counted_in_words(turns: int, shown: str) -> None:
    assert turns_text(turns) == shown


# Claude


def init(model: Any = "claude-opus-4-8", **more: Any) -> str:
    return jsonl(type="system", subtype="init", session_id="s", model=model, **more)


def result(**more: Any) -> str:
    fields: dict[str, Any] = {"subtype": "success", "is_error": False, "result": "done"}
    return jsonl(type="result", **(fields | more))


def claude(*lines: str) -> ClaudeReader:
    reader = ClaudeReader(WORKTREE)
    read_all(reader, list(lines))
    return reader


def test_claude_usage_adds_cached_input_to_input() -> None:
    reader = claude(
        init(apiKeySource="none"),
        result(
            num_turns=3,
            total_cost_usd=0.0007,
            usage={
                "input_tokens": 10,
                "cache_creation_input_tokens": 200,
                "cache_read_input_tokens": 3000,
                "output_tokens": 40,
            },
            modelUsage={"claude-opus-4-8": {}, "claude-haiku-4-5": {}},
        ),
    )
    assert reader.ended().usage == Usage(
        turns=3,
        input_tokens=3210,
        output_tokens=40,
        cached_input_tokens=3000,
        cost_usd=0.0007,
        models=("claude-opus-4-8", "claude-haiku-4-5"),  # the init's first, then subagents'
        billing="subscription",
        subagents="unknown",  # modelUsage said no tokens: the usage's are the main agent's
    )
    assert reader.summary == "3 turns, $0.0007 at API prices"


def test_claude_usage_adds_up_the_top_level_results_and_takes_the_last_ones_cost() -> None:
    # The second result answers a task notification: its usage and num_turns are that turn's
    # alone, its total_cost_usd the whole call's (as the real 2.1.197 reports them).
    reader = claude(
        init(),
        result(num_turns=1, total_cost_usd=0.5, usage={"input_tokens": 1, "output_tokens": 1}),
        result(num_turns=2, total_cost_usd=0.25, parent_tool_use_id="toolu_1"),  # a subagent's
        result(num_turns=4, total_cost_usd=1.5, usage={"input_tokens": 7, "output_tokens": 8}),
    )
    assert reader.usage == Usage(
        turns=5,
        input_tokens=8,
        output_tokens=9,
        cached_input_tokens=0,
        cost_usd=1.5,
        models=("claude-opus-4-8",),
        subagents="unknown",  # no modelUsage: the main agent's alone
    )
    assert reader.summary == "5 turns, $1.50"


@pytest.mark.parametrize("bad", [None, "12", True, -1, 1.5])
def test_claude_usage_leaves_out_what_is_no_count(bad: Any) -> None:
    reader = claude(
        init(model=bad),
        result(num_turns=bad, total_cost_usd=bad, usage={"input_tokens": bad, "output_tokens": 3}),
    )
    cost = 1.5 if bad == 1.5 else None  # a float is a cost, though no count
    models = ("12",) if bad == "12" else ()  # and any string a model's name
    assert reader.usage == Usage(output_tokens=3, cost_usd=cost, models=models, subagents="unknown")


def test_claude_usage_of_a_cost_too_large_or_not_finite_is_none() -> None:
    huge = claude(
        init(), '{"type":"result","subtype":"success","total_cost_usd":1' + "0" * 400 + "}"
    )
    assert huge.usage is not None
    assert huge.usage.cost_usd is None


def test_claude_names_a_bounded_number_of_models() -> None:
    many: dict[str, dict[str, int]] = {f"model-{index}": {} for index in range(1000)}
    reader = claude(init(model="m" * 5000), result(modelUsage=many))
    assert reader.usage is not None
    assert len(reader.usage.models) == MAX_MODELS
    assert reader.usage.models[0] == "m" * 100 + "…"


def test_claude_without_a_result_has_no_usage() -> None:
    reader = claude(init())
    assert (reader.usage, reader.ended().usage) == (None, None)


# Codex


def completed(**usage: Any) -> str:
    return jsonl(type="turn.completed", usage=usage)


def test_codex_usage_adds_up_every_turn() -> None:
    reader = CodexReader(WORKTREE)
    read_all(
        reader,
        [
            jsonl(type="thread.started", thread_id="t"),
            completed(input_tokens=100, cached_input_tokens=60, output_tokens=10),
            completed(input_tokens=50, output_tokens=5),  # no cached count: 0
            completed(input_tokens="many", output_tokens=5),  # not counted at all
        ],
    )
    assert reader.ended().usage == Usage(
        turns=2,
        input_tokens=150,
        output_tokens=15,
        cached_input_tokens=60,
        cost_usd=None,
        subagents="unknown",  # until the adapter adds the delegated threads' rollouts
    )


def test_codex_without_a_completed_turn_has_no_usage() -> None:
    reader = CodexReader(WORKTREE)
    read_all(reader, [jsonl(type="thread.started", thread_id="t")])
    assert reader.usage is None
