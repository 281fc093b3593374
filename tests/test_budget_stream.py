"""What each reader says a session used while it runs (``usage_so_far``), read from real
captures with hand-read expectations, and the budget watchdog that stops on it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from harness_helpers import jsonl, transcript_lines

from thirdshift import Budget, Usage, Watchdogs
from thirdshift._budget import BudgetChecks
from thirdshift._machine.watchdogs import Watchdog
from thirdshift.harness import (
    ClaudeReader,
    CodexReader,
    GeminiReader,
    Harness,
    OpencodeReader,
    QwenReader,
    claude,
    codex,
    gemini,
    opencode,
    qwen,
)
from thirdshift.harness._events import JsonEventReader

PAGE = Path(__file__).parent.parent / "docs" / "watchdogs-and-budgets.md"


def so_far_after_each_line(reader: JsonEventReader, name: str) -> list[Usage | None]:
    seen = []
    for line in transcript_lines(name):
        reader.feed(line)
        seen.append(reader.usage_so_far)
    return seen


def test_claude_counts_each_assistant_message_once_as_it_comes() -> None:
    model = ("claude-opus-4-8[1m]",)  # as the init names it
    # Two messages: the first printed as two lines (text, then tool_use), each saying 12 input
    # tokens and 1 output token; the result later counts 7 output tokens for each.
    reader = ClaudeReader()
    seen = so_far_after_each_line(reader, "claude-fg-tool")
    distinct = [usage for i, usage in enumerate(seen) if i == 0 or usage != seen[i - 1]]
    assert distinct[:3] == [
        None,
        Usage(turns=1, input_tokens=12, output_tokens=1, models=model, billing="api"),
        Usage(turns=2, input_tokens=24, output_tokens=2, models=model, billing="api"),
    ]
    # Then its result: the exact totals, the call's cost.
    assert distinct[3:] == [reader.usage]


def test_claude_says_no_cost_until_its_result() -> None:
    reader = ClaudeReader()
    seen = so_far_after_each_line(reader, "claude-fg-tool")
    assert all(usage is None or usage.cost_usd is None for usage in seen[:-1])
    assert seen[-1] == reader.usage
    assert reader.usage is not None
    assert reader.usage.cost_usd == 0.00047


def test_a_claude_message_seen_again_replaces_its_usage() -> None:
    reader = ClaudeReader()
    for output in (1, 5, 3):
        reader.feed(
            jsonl(
                type="assistant",
                message={"id": "m1", "usage": {"input_tokens": 4, "output_tokens": output}},
            )
        )
    assert reader.usage_so_far == Usage(turns=1, input_tokens=4, output_tokens=3)


def test_codex_says_its_usage_at_each_turn_completed() -> None:
    seen = so_far_after_each_line(CodexReader(), "codex-fg-tool")
    assert set(seen[:-1]) == {None}
    assert seen[-1] == Usage(
        turns=1, input_tokens=40, output_tokens=16, cached_input_tokens=0, subagents="unknown"
    )


def test_opencode_says_tokens_and_cost_at_each_step_finish() -> None:
    seen = so_far_after_each_line(OpencodeReader(), "opencode-fg")
    steps = [usage for i, usage in enumerate(seen) if usage is not None and usage != seen[i - 1]]
    assert steps == [
        Usage(
            turns=1,
            input_tokens=20,
            output_tokens=8,
            cached_input_tokens=0,
            cost_usd=0.0,
            subagents="unknown",
        ),
        Usage(
            turns=2,
            input_tokens=40,
            output_tokens=16,
            cached_input_tokens=0,
            cost_usd=0.0,
            subagents="unknown",
        ),
    ]


@pytest.mark.parametrize(
    ("reader", "name"), [(GeminiReader(), "gemini-fg"), (QwenReader(), "qwen-fg")]
)
def test_gemini_and_qwen_say_usage_only_at_the_end(reader: JsonEventReader, name: str) -> None:
    assert set(so_far_after_each_line(reader, name)) == {None}
    assert reader.ended().usage is not None


def test_the_docs_table_is_what_each_harness_declares() -> None:
    # | Harness | checked while it runs | checked at its end |
    section = PAGE.read_text().split("## Capping what the sessions spend")[1].split("\n#")[0]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]*) \| ([^|]*) \|$", section, re.MULTILINE)
    table = {
        name: (
            frozenset(re.findall(r"usd|tokens|turns", now)),
            frozenset(re.findall(r"usd|tokens|turns", end)),
        )
        for name, now, end in rows
    }
    declared = {
        choice.harness.name: choice.harness.budget_checks
        for choice in (claude(), codex(), opencode(), gemini(), qwen())
    }
    assert table == {
        name: (checks.while_running, checks.at_end) for name, checks in declared.items()
    }


def test_a_harness_that_declares_no_budget_checks_is_taken_to_say_tokens_and_turns_at_the_end() -> (
    None
):
    class Plugin(Harness):
        name = "plugin"

    # Only the default is asked for: the members it leaves out are not reached.
    assert Plugin().budget_checks == BudgetChecks()  # type: ignore[abstract]


def watchdog_with_budget(crossed: list[str | None]) -> Watchdog:
    return Watchdog(
        Watchdogs(idle=None, after_result=None),
        last_output=lambda: 0.0,
        turns_ended=lambda: 0,
        session_id=lambda: None,
        resume=None,
        budget=lambda: crossed[0],
    )


def test_the_budget_watchdog_fires_once_the_stream_crosses_a_limit() -> None:
    crossed: list[str | None] = [None]
    watchdog = watchdog_with_budget(crossed)
    assert watchdog.check(1.0, cli_running=True) is None

    crossed[0] = "tokens 1200 of 1000"
    fired = watchdog.check(2.0, cli_running=True)

    assert fired is not None
    assert (fired.what, fired.why) == ("budget", "the budget is spent (tokens 1200 of 1000)")


def test_the_budget_watchdog_leaves_a_cli_that_has_exited_to_the_adapter() -> None:
    watchdog = watchdog_with_budget(["turns 3 of 3"])
    assert watchdog.check(1.0, cli_running=False) is None


# A call of several turns, and sub-agents (captures of the real claude under the fake model)


def first_line_crossing(reader: JsonEventReader, name: str, budget: Budget) -> int | None:
    """The index of the line after which ``budget`` is first crossed, as the watchdog checks."""
    for index, line in enumerate(transcript_lines(name)):
        reader.feed(line)
        if budget.crossed_by(reader.usage_so_far or Usage()) is not None:
            return index
    return None


def result_lines(name: str) -> list[int]:
    return [i for i, line in enumerate(transcript_lines(name)) if '"type":"result"' in line]


def test_claude_says_the_calls_cost_so_far_at_each_of_its_results() -> None:
    reader = ClaudeReader()
    seen = so_far_after_each_line(reader, "claude-five-turns")
    costs = [seen[index].cost_usd for index in result_lines("claude-five-turns")]  # type: ignore[union-attr]
    assert costs == [0.00035, 0.0007, 0.00105, 0.0014, 0.001575]


def test_a_usd_budget_is_crossed_at_the_result_that_crosses_it() -> None:
    reader = ClaudeReader()
    crossed = first_line_crossing(reader, "claude-five-turns", Budget(usd=0.001))
    assert crossed == result_lines("claude-five-turns")[2]  # the third turn's result: $0.00105
    assert reader.usage_so_far == Usage(
        turns=6,  # every turn so far: 2 requests each
        input_tokens=60,
        output_tokens=30,
        cached_input_tokens=0,
        cost_usd=0.00105,
        models=("claude-opus-4-8[1m]",),
        billing="api",
        subagents="counted",
    )


def test_a_sub_agents_last_message_counts_as_its_answer_comes_back() -> None:
    # The main agent's call (10 in, 5 out), the sub-agent's Bash call (shown, with a
    # parent_tool_use_id) and its last message (never shown: its usage comes back in the
    # tool result): 45 tokens before the main agent's own last message.
    name = "claude-subagent"
    lines = transcript_lines(name)
    crossed = first_line_crossing(ClaudeReader(), name, Budget(tokens=45))
    assert crossed is not None
    assert '"agentId"' in lines[crossed]


def test_a_claude_result_counts_its_sub_agents_in_tokens_and_cost() -> None:
    reader = ClaudeReader()
    so_far_after_each_line(reader, "claude-subagent")
    assert reader.usage is not None
    # Its result's usage says 20 in and 10 out, the main agent's alone.
    assert (reader.usage.input_tokens, reader.usage.output_tokens) == (40, 20)
    assert reader.usage.subagents == "counted"
