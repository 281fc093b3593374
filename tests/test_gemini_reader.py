"""Reading ``gemini -o stream-json``: each rule of the reader, and its ``finish`` (the captures
are read end to end in test_transcripts.py)."""

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
    TurnLimitReached,
    Usage,
)
from thirdshift.harness import GeminiReader
from thirdshift.harness._base import finish_reading

SESSION = "3d20dbe1-869c-4aca-8e9c-2dbcabcae5fb"
TREE = "/home/dev/work/gm"
INTERRUPTED = "gemini exited 0 without a result: its turn was interrupted"


def init(session_id: Any = SESSION, model: Any = "auto") -> str:
    return jsonl(
        type="init", timestamp="2026-12-01T04:35:17.895Z", session_id=session_id, model=model
    )


def user(content: str = "BGTASK please") -> str:
    return jsonl(type="message", role="user", content=content)


def said(content: Any, delta: Any = True) -> str:
    event: dict[str, Any] = {"type": "message", "role": "assistant", "content": content}
    if delta is not None:
        event["delta"] = delta
    return jsonl(**event)


def tool_use(name: Any, parameters: Any = None) -> str:
    event: dict[str, Any] = {"type": "tool_use", "tool_name": name, "tool_id": f"{name}_0"}
    if parameters is not None:
        event["parameters"] = parameters
    return jsonl(**event)


def shell(command: Any, background: bool = False) -> str:
    return tool_use(
        "run_shell_command",
        {"command": command, "is_background": background, "description": "Mock shell command"},
    )


def tool_result(output: str = "hi-from-tool") -> str:
    return jsonl(type="tool_result", tool_id="t_0", status="success", output=output)


def stats(
    tokens_in: Any = 60, tokens_out: Any = 24, cached: Any = 0, models: Any = None
) -> dict[str, Any]:
    return {
        "total_tokens": 84,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cached": cached,
        "duration_ms": 298,
        "tool_calls": 1,
        "models": {"gemini-3.5-flash-lite": {}, "gemini-3.8-flash": {}}
        if models is None
        else models,
    }


def result(status: Any = "success", error: Any = None, **more: Any) -> str:
    event: dict[str, Any] = {"type": "result", "status": status, "stats": stats(), **more}
    if error is not None:
        event["error"] = error
    return jsonl(**event)


def read(*lines: str) -> tuple[GeminiReader, list[str]]:
    reader = GeminiReader(Path(TREE))
    return reader, read_all(reader, list(lines))


# The session id


def test_the_session_id_is_the_first_inits() -> None:
    reader, progress = read(init(), init("other"), user())
    assert reader.session_id == SESSION
    assert progress == ["session started"]


@pytest.mark.parametrize("session_id", [None, "", 7, ["x"]])
def test_an_init_without_an_id_starts_nothing(session_id: Any) -> None:
    reader, progress = read(init(session_id))
    assert (reader.session_id, progress) == (None, [])


# The final message


def test_the_assistants_pieces_are_joined_into_the_final_message() -> None:
    reader, _ = read(init(), user(), said("Hello"), said(" from"), said(" the mock."), result())
    assert reader.final_message == "Hello from the mock."


def test_only_the_reply_after_the_last_tool_is_the_final_message() -> None:
    reader, _ = read(
        init(),
        user(),
        said("Let me look."),
        shell("ls"),
        tool_result(),
        said("Found it."),
        result(),
    )
    assert reader.final_message == "Found it."


def test_a_whole_message_replaces_the_pieces_before_it() -> None:
    reader, _ = read(init(), said("Draft"), said("Final answer.", delta=None))
    assert reader.final_message == "Final answer."
    reader, _ = read(init(), said("a"), said("b", delta=False))
    assert reader.final_message == "b"


def test_a_reply_before_a_tool_stays_the_final_message_if_nothing_follows() -> None:
    reader, _ = read(init(), said("Starting."), shell("sleep 317"))
    assert reader.final_message == "Starting."


def test_no_assistant_text_is_no_final_message() -> None:
    assert read(init(), user(), said(None), said(["x"]), result())[0].final_message is None


# Progress lines


@pytest.mark.parametrize(
    ("event", "shown"),
    [
        (shell("echo hi-from-tool"), "$ echo hi-from-tool"),
        (shell("sleep 317", background=True), "$ sleep 317"),
        (shell("git push origin main"), "push"),
        (shell(None), "run_shell_command"),
        (tool_use("read_file", {"file_path": f"{TREE}/README.md"}), "read_file README.md"),
        (tool_use("read_file", {"absolute_path": f"{TREE}/a/b.py"}), "read_file a/b.py"),
        (tool_use("replace", {"file_path": "/etc/hosts", "old_string": "x"}), "replace /etc/hosts"),
        (tool_use("grep_search", {"pattern": "TODO", "dir_path": TREE}), "grep_search TODO"),
        (tool_use("list_directory", {"dir_path": f"{TREE}/src"}), "list_directory src"),
        (tool_use("web_fetch", {"url": "https://example.org"}), "web_fetch https://example.org"),
        (
            tool_use("google_web_search", {"query": "pytest xdist"}),
            "google_web_search pytest xdist",
        ),
        (tool_use("activate_skill", {"name": "review"}), "skill review"),
        (tool_use("activate_skill", {"name": ""}), "skill ?"),
        (tool_use("save_memory", {"fact": "x"}), "save_memory"),
        (tool_use("write_todos", "not a dict"), "write_todos"),
    ],
)
def test_each_tool_call_gives_one_condensed_line(event: str, shown: str) -> None:
    _, progress = read(init(), event)
    assert progress == ["session started", shown]


def test_a_tool_without_a_name_and_a_tool_result_give_no_line() -> None:
    assert read(init(), tool_use(None), tool_use(""), tool_result())[1] == ["session started"]


# The outcome


def test_a_successful_result_is_a_successful_turn() -> None:
    reader, _ = read(init(), said("Hi."), result())
    assert (reader.failed, reader.error) == (False, None)


def test_an_api_error_fails_the_turn_with_its_message() -> None:
    message = '[API Error: {"error":{"code":401,"status":"UNAUTHENTICATED"}}]'
    reader, _ = read(init(), result("error", {"type": "unknown", "message": message}))
    assert (reader.failed, reader.error) == (True, message)


@pytest.mark.parametrize(
    ("status", "error", "said"),
    [
        ("error", None, "the turn ended with status error"),
        ("error", {"message": ""}, "the turn ended with status error"),
        ("cancelled", "boom", "the turn ended with status cancelled"),
        (None, None, "the turn ended with status none"),
        (7, None, "the turn ended with status none"),
    ],
)
def test_a_result_that_is_no_success_fails_saying_what_it_can(
    status: Any, error: Any, said: str
) -> None:
    reader, _ = read(init(), result(status, error))
    assert (reader.failed, reader.error) == (True, said)


def test_the_last_result_is_the_outcome() -> None:
    reader, _ = read(init(), result("error", {"message": "first"}), result())
    assert (reader.failed, reader.error) == (False, None)


def test_without_a_result_the_turn_failed_and_the_stream_cannot_say_why() -> None:
    reader, _ = read(init(), shell("echo long-start; sleep 317"))
    assert (reader.failed, reader.error) == (True, None)


def test_exit_0_without_a_result_is_an_interruption() -> None:
    """SIGINT and SIGTERM make Gemini exit 0 at once, printing no result."""
    reader, _ = read(init(), shell("echo long-start; sleep 317"))
    finish_reading(reader, 0)
    assert (reader.failed, reader.error) == (True, INTERRUPTED)
    assert reader.ended() == Ended(session_id=SESSION)


@pytest.mark.parametrize("exit_code", [1, 41, 42, 130, 145, None])
def test_any_other_exit_without_a_result_leaves_the_telling_to_stderr(
    exit_code: int | None,
) -> None:
    reader, _ = read()
    finish_reading(reader, exit_code)
    assert (reader.failed, reader.error) == (True, None)


def test_exit_0_after_a_result_changes_nothing() -> None:
    reader, _ = read(init(), said("Hi."), result())
    finish_reading(reader, 0)
    assert (reader.failed, reader.error, reader.final_message) == (False, None, "Hi.")


def test_an_error_event_is_the_last_error_not_a_failure() -> None:
    reader, _ = read(init(), jsonl(type="error", severity="warning", message="Loop detected"))
    finish_reading(reader, 0)
    assert reader.error == INTERRUPTED  # no result: the interruption is what counts
    reader, _ = read(init(), jsonl(type="error", message="Loop detected"), result())
    assert (reader.failed, reader.error) == (False, "Loop detected")


# Usage and summary


def test_the_results_stats_are_the_usage_and_summary() -> None:
    reader, _ = read(init(), result())
    assert reader.summary == "60 input tokens (0 cached), 24 output tokens"
    assert reader.usage == Usage(
        input_tokens=60,
        output_tokens=24,
        cached_input_tokens=0,
        models=("gemini-3.5-flash-lite", "gemini-3.8-flash"),
        subagents="unknown",
    )


@pytest.mark.parametrize(
    "stats_value", [None, "x", [], {"input_tokens": "60"}, {"input_tokens": -1}]
)
def test_stats_without_a_count_of_input_tokens_are_no_usage(stats_value: Any) -> None:
    reader, _ = read(init(), jsonl(type="result", status="success", stats=stats_value))
    assert (reader.summary, reader.usage) == (None, None)


def test_other_stats_of_the_wrong_type_count_as_zero_and_odd_models_are_left_out() -> None:
    event: dict[str, object] = {"type": "result", "status": "success"}
    event["stats"] = stats(tokens_out=None, cached=True, models=["m"])
    reader, _ = read(init(), jsonl(**event))
    assert reader.summary == "60 input tokens (0 cached), 0 output tokens"
    assert reader.usage is not None
    assert reader.usage.models == ()


# Killed work


def test_nothing_is_ever_reported_killed() -> None:
    """A command moved to the background outlives Gemini, and the stream never says so."""
    reader, _ = read(
        init(),
        shell("sleep 317", background=True),
        tool_result("Command moved to background (PID: 17835). Output hidden."),
        result(),
    )
    assert reader.killed == ()
    assert reader.ended().killed == ()


# The failure class


NOW = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def failed_with(message: str) -> str:
    return result("error", {"type": "unknown", "message": message})


@pytest.mark.parametrize(
    ("lines", "exit_code", "kind"),
    [
        (
            [failed_with('[API Error: {"error":{"code":401,"status":"UNAUTHENTICATED"}}]')],
            145,
            AuthFailed,
        ),
        ([failed_with('{"status":"UNAUTHENTICATED"}')], None, AuthFailed),  # the stream alone
        ([failed_with('{"status":"PERMISSION_DENIED"}')], None, AuthFailed),
        ([failed_with('{"status":"RESOURCE_EXHAUSTED"}')], None, RateLimited),
        ([failed_with('{"status":"UNAVAILABLE"}')], None, Overloaded),
        ([failed_with("Incorrect API key")], 1, AuthFailed),  # the shared rules' texts
        ([failed_with("[API Error: something]")], 145, AuthFailed),  # 401 & 255
        ([failed_with("[API Error: something]")], 147, AuthFailed),  # 403 & 255
        ([failed_with("[API Error: something]")], 173, RateLimited),  # 429 & 255
        ([failed_with("[API Error: something]")], 247, Overloaded),  # 503 & 255
        ([init()], 41, AuthFailed),  # its own fatal auth error
        ([init()], 53, TurnLimitReached),  # its own turn limit
    ],
)
def test_a_failure_is_classified_by_its_text_else_its_exit_code(
    lines: list[str], exit_code: int | None, kind: type[SessionFailed]
) -> None:
    reader, _ = read(*lines)
    finish_reading(reader, exit_code)
    info = reader.failure_at(NOW)
    assert info is not None
    assert info.kind is kind
    assert reader.failure == info


@pytest.mark.parametrize(
    ("lines", "exit_code"),
    [
        ([init(), result()], 0),  # no failure
        ([init(), shell("sleep 317")], 0),  # interrupted
        ([], 42),  # bad input, e.g. an unknown resume id: stderr tells
        ([failed_with("[API Error: something]")], 1),
        ([failed_with("[API Error: something]")], None),
        ([failed_with("[API Error: something]")], 143),  # below 144: no HTTP status of 400+
    ],
)
def test_what_no_rule_knows_has_no_failure_class(lines: list[str], exit_code: int | None) -> None:
    reader, _ = read(*lines)
    finish_reading(reader, exit_code)
    assert reader.failure_at(NOW) is None
