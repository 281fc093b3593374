"""Reading ``opencode run --format json``: each rule of the reader (the captures are read end to
end in test_transcripts.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from harness_helpers import jsonl, read_all

from thirdshift import (
    AuthFailed,
    Ended,
    Overloaded,
    RateLimited,
    SessionFailed,
    Usage,
    UsageLimitReached,
)
from thirdshift.harness import OpencodeReader
from thirdshift.harness._lines import MAX_MESSAGE

SESSION = "ses_dd02063a2ffexibETwonf7yD0T"
TREE = "/home/dev/work/oc"


def line(kind: str, session_id: Any = SESSION, **fields: Any) -> str:
    event: dict[str, Any] = {"type": kind, "timestamp": 1796099516828, **fields}
    if session_id is not None:
        event["sessionID"] = session_id
    return jsonl(**event)


def step_start() -> str:
    return line("step_start", part={"type": "step-start", "messageID": "msg_1"})


def text(words: Any, part_id: Any = "prt_1") -> str:
    part: dict[str, Any] = {"type": "text", "text": words}
    if part_id is not None:
        part["id"] = part_id
    return line("text", part=part)


def tool(name: Any, tool_input: Any = None, status: str = "completed") -> str:
    state: dict[str, Any] = {"status": status, "output": "whatever it printed"}
    if tool_input is not None:
        state["input"] = tool_input
    return line("tool_use", part={"type": "tool", "tool": name, "callID": "call_1", "state": state})


def bash(command: Any) -> str:
    return tool("bash", {"command": command})


def step_finish(
    reason: Any = "stop",
    tokens_in: Any = 20,
    tokens_out: Any = 8,
    cached: Any = 0,
    cost: Any = 0,
    *,
    reasoning: Any = 0,
    written: Any = 0,
) -> str:
    tokens = {"total": 28, "input": tokens_in, "output": tokens_out, "reasoning": reasoning}
    tokens["cache"] = {"write": written, "read": cached}
    return line(
        "step_finish",
        part={"type": "step-finish", "reason": reason, "tokens": tokens, "cost": cost},
    )


def api_error(
    name: Any = "APIError", message: Any = "mock: Incorrect API key provided", status: Any = 401
) -> str:
    data: dict[str, Any] = {"message": message, "statusCode": status, "isRetryable": False}
    return line("error", error={"name": name, "data": data})


def read(*lines: str) -> tuple[OpencodeReader, list[str]]:
    reader = OpencodeReader(Path(TREE))
    return reader, read_all(reader, list(lines))


# The session id


def test_the_session_id_is_on_every_line_and_the_first_one_counts() -> None:
    reader, progress = read(step_start(), line("step_start", session_id="ses_other"))
    assert reader.session_id == SESSION
    assert progress == ["session started"]


def test_lines_without_a_session_id_start_nothing() -> None:
    reader, progress = read(line("step_start", session_id=None), line("text", session_id=7))
    assert reader.session_id is None
    assert progress == []


# The final message


def test_the_final_message_is_the_text_of_the_last_step_that_had_any() -> None:
    reader, _ = read(
        step_start(),
        text("Running the tests.", "prt_a"),
        bash("pytest"),
        step_finish("tool-calls"),
        step_start(),
        text("All green.", "prt_b"),
        step_finish(),
    )
    assert reader.final_message == "All green."


def test_a_last_step_without_text_keeps_the_text_before_it() -> None:
    reader, _ = read(step_start(), text("Done."), step_finish("tool-calls"), step_start())
    assert reader.final_message == "Done."


def test_the_last_text_part_printed_is_the_final_message() -> None:
    reader, _ = read(step_start(), text("one", "prt_a"), text("two", "prt_b"))
    assert reader.final_message == "two"
    reader, _ = read(step_start(), text("draft", "prt_a"), text("final", "prt_a"))
    assert reader.final_message == "final"  # a part printed again replaces itself


def test_a_huge_final_message_and_error_are_cut_with_a_note() -> None:
    note = " more characters in the Session log)"
    reader, _ = read(step_start(), text("m" * (MAX_MESSAGE + 5)))
    assert reader.final_message == "m" * MAX_MESSAGE + f"… (cut: 5{note}"
    reader, _ = read(api_error(name="E" * 500, message="e" * MAX_MESSAGE, status=None))
    assert reader.error == "E" * 100 + "…: " + "e" * (MAX_MESSAGE - 103) + f"… (cut: 103{note}"


def test_no_text_is_no_final_message_and_text_of_the_wrong_type_is_none() -> None:
    assert read(step_start(), step_finish())[0].final_message is None
    assert read(step_start(), text(["x"]), text(None))[0].final_message is None


# Progress lines


@pytest.mark.parametrize(
    ("event", "shown"),
    [
        (bash("echo hi\necho there"), "$ echo hi"),
        (bash("git commit -am wip && git push"), "commit and push"),
        (bash(7), "bash"),
        (tool("read", {"filePath": f"{TREE}/src/app.py"}), "read src/app.py"),
        (tool("edit", {"filePath": "/elsewhere/x.py", "oldString": "a"}), "edit /elsewhere/x.py"),
        (tool("grep", {"pattern": "TODO", "path": TREE}), "grep TODO"),
        (tool("list", {"path": f"{TREE}/src"}), "list src"),
        (tool("glob", {"pattern": "**/*.py"}), "glob **/*.py"),
        (
            tool("webfetch", {"url": "https://example.org", "format": "text"}),
            "webfetch https://example.org",
        ),
        (tool("task", {"description": "Explore the code", "prompt": "…"}), "task Explore the code"),
        (tool("skill", {"name": "review"}), "skill review"),
        (tool("skill", {}), "skill ?"),
        (tool("todowrite", {"todos": []}), "todowrite"),
        (tool("mcp_" + "x" * 200), "mcp_" + "x" * 96 + "…"),
        (tool("bash", "not a dict"), "bash"),
    ],
)
def test_each_tool_call_gives_one_condensed_line(event: str, shown: str) -> None:
    _, progress = read(step_start(), event)
    assert progress == ["session started", shown]


def test_a_tool_without_a_name_gives_no_line() -> None:
    assert read(step_start(), tool(None), tool(""))[1] == ["session started"]


def test_a_huge_command_is_shortened() -> None:
    _, progress = read(bash("x" * 5_000_000))
    assert progress == ["session started", "$ " + "x" * 100 + "…"]


# The outcome


def test_a_turn_whose_last_step_stopped_succeeded() -> None:
    reader, _ = read(
        step_start(), bash("ls"), step_finish("tool-calls"), step_start(), step_finish()
    )
    assert not reader.failed
    assert reader.error is None


@pytest.mark.parametrize("reason", ["tool-calls", "length", "content-filter", 7, None])
def test_a_last_step_that_did_not_stop_is_an_unfinished_turn(reason: Any) -> None:
    reader, _ = read(step_start(), step_finish(reason))
    assert reader.failed
    shown = reason if isinstance(reason, str) else "unknown"
    assert reader.error == f"opencode's last step ended with reason {shown}, not stop"


def test_a_stream_cut_off_mid_step_failed_without_an_error_of_its_own() -> None:
    """SIGINT and SIGTERM kill opencode at once: the stream just stops."""
    reader, _ = read(step_start(), step_finish(), step_start())
    assert reader.failed
    assert reader.error is None


def test_an_empty_stream_failed_and_leaves_the_telling_to_stderr() -> None:
    reader, progress = read()
    assert (reader.failed, reader.error, reader.session_id, progress) == (True, None, None, [])


def test_an_api_error_fails_the_turn_with_its_name_status_and_message() -> None:
    reader, _ = read(api_error())
    assert reader.failed
    assert reader.error == "APIError 401: mock: Incorrect API key provided"


def test_the_first_error_is_the_cause_even_if_the_turn_then_stops() -> None:
    reader, _ = read(api_error(), api_error("Other", "later", 500), step_start(), step_finish())
    assert reader.failed
    assert reader.error == "APIError 401: mock: Incorrect API key provided"


@pytest.mark.parametrize(
    ("event", "error"),
    [
        (api_error(status=None), "APIError: mock: Incorrect API key provided"),
        (api_error(status=True), "APIError: mock: Incorrect API key provided"),
        (api_error(message=""), "APIError 401"),
        (api_error(name=None, message=None, status=None), "error"),
        (line("error", error={"name": "UnknownError"}), "UnknownError"),
        (line("error", error="boom"), "opencode reported an error"),
        (line("error"), "opencode reported an error"),
    ],
)
def test_an_error_says_what_it_can(event: str, error: str) -> None:
    reader, _ = read(event)
    assert (reader.failed, reader.error) == (True, error)


# Usage and summary


def test_steps_tokens_and_cost_are_summed_over_every_step() -> None:
    reader, _ = read(
        step_start(),
        step_finish("tool-calls", 20, 8, 5, 0.25),
        step_start(),
        step_finish("stop", 30, 9, 0, 0.5),
    )
    assert reader.summary == "2 steps, 55 input tokens (5 cached), 17 output tokens, $0.75"
    assert reader.usage == Usage(
        turns=2,
        input_tokens=55,
        output_tokens=17,
        cached_input_tokens=5,
        cost_usd=0.75,
        subagents="unknown",
    )


def test_input_counts_cache_reads_and_writes_and_output_counts_reasoning() -> None:
    """As for every CLI: input is all the input read, output all the model wrote."""
    reader, _ = read(step_start(), step_finish(tokens_in=10, cached=100, written=7, reasoning=3))
    assert reader.usage == Usage(
        turns=1,
        input_tokens=117,
        output_tokens=11,
        cached_input_tokens=100,
        cost_usd=0.0,
        subagents="unknown",
    )


@pytest.mark.parametrize("cost", [None, "0.5", True, -1, float("nan"), float("inf"), 10**400])
def test_a_cost_that_is_no_amount_is_left_out(cost: Any) -> None:
    reader, _ = read(step_start(), step_finish(cost=cost))
    assert reader.summary == "1 step, 20 input tokens (0 cached), 8 output tokens"
    assert reader.usage is not None
    assert reader.usage.cost_usd is None


def test_a_cost_that_would_overflow_the_sum_is_left_out() -> None:
    reader, _ = read(step_start(), step_finish(cost=1e308), step_start(), step_finish(cost=1e308))
    assert reader.usage is not None
    assert reader.usage.cost_usd == 1e308


@pytest.mark.parametrize("tokens_in", [None, "20", True, -3, 1.5])
def test_without_a_count_of_input_tokens_there_is_no_usage(tokens_in: Any) -> None:
    reader, _ = read(step_start(), step_finish(tokens_in=tokens_in))
    assert (reader.summary, reader.usage) == (None, None)


def test_other_counts_of_the_wrong_type_count_as_zero() -> None:
    reader, _ = read(step_start(), step_finish(tokens_out=False, cached="5"))
    assert reader.summary == "1 step, 20 input tokens (0 cached), 0 output tokens, $0.00"


# Killed work and the ending


def test_nothing_is_ever_reported_killed() -> None:
    """opencode has no background flag, and a `&` child outlives it unmentioned."""
    reader, _ = read(step_start(), bash("sleep 317 >/dev/null 2>&1 &"), step_finish())
    assert reader.killed == ()


def test_ended_holds_the_id_the_final_message_and_the_usage() -> None:
    reader, _ = read(step_start(), text("Done."), step_finish())
    assert reader.ended() == Ended(
        session_id=SESSION,
        killed=(),
        final_message="Done.",
        usage=Usage(
            turns=1,
            input_tokens=20,
            output_tokens=8,
            cached_input_tokens=0,
            cost_usd=0.0,
            subagents="unknown",
        ),
    )


def test_a_reader_without_a_worktree_keeps_paths_as_they_are() -> None:
    reader = OpencodeReader()
    assert reader.feed(tool("read", {"filePath": f"{TREE}/a.py"})) == [
        "session started",
        f"read {TREE}/a.py",
    ]


# The failure class


NOW = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("event", "kind"),
    [
        (api_error(), AuthFailed),
        (api_error(message="no", status=403), AuthFailed),
        (api_error(message="slow down", status=429), RateLimited),
        (api_error(message="oops", status=503), Overloaded),
        (api_error(message="Incorrect API key provided", status=None), AuthFailed),
        (api_error(message="You've hit your usage limit", status=None), UsageLimitReached),
    ],
)
def test_an_error_is_classified_by_its_status_else_its_text(
    event: str, kind: type[SessionFailed]
) -> None:
    reader, _ = read(event)
    info = reader.failure_at(NOW)
    assert info is not None
    assert info.kind is kind
    assert reader.failure == info


@pytest.mark.parametrize(
    "lines",
    [
        [api_error(message="something odd", status=418)],
        [step_start(), step_finish("length")],
        [step_start()],
        [step_start(), step_finish()],
    ],
)
def test_what_no_rule_knows_and_what_did_not_fail_has_no_failure_class(lines: list[str]) -> None:
    reader, _ = read(*lines)
    assert reader.failure_at(NOW) is None
