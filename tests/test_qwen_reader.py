"""Reading ``qwen -o stream-json``: where it reads as Claude's stream and where Qwen differs (the
captures are read end to end in test_transcripts.py)."""

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
from thirdshift.harness import ClaudeReader, QwenReader

SESSION = "c731bf94-e9ac-4802-8e58-06ee9c6f962d"
CWD = "/home/dev/work/qwen"


def init(session_id: Any = SESSION, cwd: Any = CWD, model: Any = "mock-model") -> str:
    return jsonl(
        type="system",
        subtype="init",
        uuid=session_id,
        session_id=session_id,
        cwd=cwd,
        tools=["run_shell_command", "read_file"],
        model=model,
        permission_mode="yolo",
        qwen_code_version="0.24.4",
    )


def assistant(*content: dict[str, Any]) -> str:
    message = {"role": "assistant", "model": "mock-model", "content": list(content)}
    return jsonl(type="assistant", session_id=SESSION, parent_tool_use_id=None, message=message)


def tool_use(name: Any, tool_input: Any = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_use", "id": "call_1", "name": name}
    if tool_input is not None:
        block["input"] = tool_input
    return block


def shell(command: Any, background: bool = False) -> dict[str, Any]:
    return tool_use("run_shell_command", {"command": command, "is_background": background})


def result(
    subtype: str = "success",
    is_error: bool = False,
    text: Any = "Done.",
    turns: Any = 2,
    usage: Any = None,
    **more: Any,
) -> str:
    event: dict[str, Any] = {
        "type": "result",
        "subtype": subtype,
        "session_id": SESSION,
        "is_error": is_error,
        "num_turns": turns,
        "usage": {"input_tokens": 40, "output_tokens": 16, "cache_read_input_tokens": 4}
        if usage is None
        else usage,
        "permission_denials": [],
        **more,
    }
    if text is not None:
        event["result"] = text
    return jsonl(**event)


def read(*lines: str) -> tuple[QwenReader, list[str]]:
    reader = QwenReader(Path("/elsewhere"))
    return reader, read_all(reader, list(lines))


def test_it_is_a_claude_reader_where_the_streams_agree() -> None:
    assert isinstance(QwenReader(), ClaudeReader)


# As Claude's stream: the init and the result


def test_the_session_id_is_the_first_inits() -> None:
    reader, progress = read(init(), init("other", "/other"), result())
    assert reader.session_id == SESSION
    assert progress == ["session started"]


def test_a_successful_result_is_the_final_message() -> None:
    reader, _ = read(init(), result())
    assert (reader.failed, reader.error, reader.final_message) == (False, None, "Done.")


def test_a_subagents_result_is_not_the_sessions() -> None:
    reader, _ = read(init(), result(), result("error_max_turns", True, parent_tool_use_id="call_9"))
    assert (reader.failed, reader.final_message) == (False, "Done.")


def test_an_api_error_fails_the_turn_with_its_error_message() -> None:
    message = "[API Error: 401 mock: Incorrect API key provided]"
    reader, _ = read(
        init(), result("error_during_execution", True, None, 1, error={"message": message})
    )
    assert (reader.failed, reader.error, reader.final_message) == (True, message, None)


def test_a_failed_result_without_an_error_message_is_read_as_claudes() -> None:
    reader, _ = read(init(), result("error_max_turns", True, None, error={"message": 7}))
    assert (reader.failed, reader.error) == (True, "error_max_turns")
    reader, _ = read(init(), result("success", True, "Invalid API key"))
    assert (reader.failed, reader.error) == (True, "Invalid API key")


def test_an_error_message_of_a_successful_result_is_no_error() -> None:
    reader, _ = read(init(), result(error={"message": "a warning"}))
    assert (reader.failed, reader.error) == (False, None)


def test_without_a_result_the_turn_failed_and_stderr_tells_why() -> None:
    """Qwen ends without one only when it could not start or was stopped mid-turn."""
    reader, _ = read(init(), assistant(shell("echo long-start; sleep 317; echo long-done")))
    assert (reader.failed, reader.error) == (True, None)
    assert read()[0].failed


# Where Qwen differs: its tools


@pytest.mark.parametrize(
    ("block", "shown"),
    [
        (shell("echo hi-from-tool"), "$ echo hi-from-tool"),
        (shell("sleep 317", background=True), "$ sleep 317"),
        (shell("git commit -m x"), "commit"),
        (shell(None), "run_shell_command"),
        (tool_use("read_file", {"file_path": f"{CWD}/src/a.py"}), "read_file src/a.py"),
        (tool_use("edit", {"file_path": f"{CWD}/b.py", "old_string": "x"}), "edit b.py"),
        (tool_use("grep_search", {"pattern": "TODO", "path": CWD}), "grep_search TODO"),
        (tool_use("glob", {"pattern": "**/*.ts"}), "glob **/*.ts"),
        (tool_use("skill", {"skill": "review"}), "skill review"),
        (tool_use("agent", {"description": "Explore", "prompt": "…"}), "agent Explore"),
        (tool_use("todo_write", "not a dict"), "todo_write"),
        (tool_use("Bash", {"command": "ls"}), "Bash"),  # Claude's tool names mean nothing here
    ],
)
def test_each_tool_call_gives_one_condensed_line_in_gemini_cli_terms(
    block: dict[str, Any], shown: str
) -> None:
    _, progress = read(init(), assistant(block))
    assert progress == ["session started", shown]


def test_paths_are_relative_to_the_worktree_until_an_init_names_the_cwd() -> None:
    reader = QwenReader(Path("/w"))
    read_file = assistant(tool_use("read_file", {"file_path": "/w/x.py"}))
    assert reader.feed(read_file) == ["read_file x.py"]
    assert read_all(reader, [init(cwd=7), read_file]) == ["session started", "read_file x.py"]


def test_one_line_per_tool_block_and_none_for_text_or_nameless_tools() -> None:
    _, progress = read(
        assistant({"type": "text", "text": "hi"}, shell("ls"), tool_use(None), shell("pwd")),
        assistant(),
        jsonl(type="assistant", message="nope"),
    )
    assert progress == ["$ ls", "$ pwd"]


# Where Qwen differs: no killed work in the stream


def test_task_events_are_not_qwens_and_nothing_is_ever_reported_killed() -> None:
    """Qwen kills its background shells at exit and says so only in a status file."""
    reader, progress = read(
        init(),
        jsonl(type="system", subtype="task_started", task_id="b1", description="Sleep"),
        result(),
        jsonl(type="system", subtype="task_updated", task_id="b1", patch={"status": "killed"}),
        jsonl(type="system", subtype="task_notification", task_id="b1", status="stopped"),
    )
    assert reader.killed == ()
    assert reader.ended().killed == ()
    assert progress == ["session started"]


# Where Qwen differs: usage instead of a cost


def test_the_results_turns_and_tokens_are_the_summary_and_usage() -> None:
    reader, _ = read(init(), result())
    assert reader.summary == "2 turns, 40 input tokens (4 cached), 16 output tokens"
    assert reader.usage == Usage(
        turns=2,
        input_tokens=40,
        output_tokens=16,
        cached_input_tokens=4,
        models=("mock-model",),
        subagents="unknown",
    )


def test_the_last_result_holds_the_usage() -> None:
    reader, _ = read(init(), result(turns=1), result(turns=3, usage="none"))
    assert (reader.summary, reader.usage) == (None, None)


@pytest.mark.parametrize("turns", [None, "2", True, -1])
def test_without_a_turn_count_the_summary_is_the_tokens(turns: Any) -> None:
    reader, _ = read(init(model=None), result(turns=turns))
    assert reader.summary == "40 input tokens (4 cached), 16 output tokens"
    assert reader.usage == Usage(
        input_tokens=40, output_tokens=16, cached_input_tokens=4, subagents="unknown"
    )


def test_ended_holds_the_id_the_final_message_and_the_usage() -> None:
    reader, _ = read(init(), result(usage={"input_tokens": 5}))
    assert reader.ended() == Ended(
        session_id=SESSION,
        killed=(),
        final_message="Done.",
        usage=Usage(
            turns=2,
            input_tokens=5,
            output_tokens=0,
            cached_input_tokens=0,
            models=("mock-model",),
            subagents="unknown",
        ),
    )


# The failure class


NOW = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def api_error(message: str) -> str:
    return result("error_during_execution", True, None, 1, error={"message": message})


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("[API Error: 401 mock: Incorrect API key provided]", AuthFailed),
        ("[API Error: 401]", AuthFailed),
        ("[API Error: 403 Forbidden]", AuthFailed),
        ("[API Error: 429 slow down]", RateLimited),
        ("[API Error: 503 try later]", Overloaded),
        ("[API Error: connection reset] 429 Too Many Requests", RateLimited),  # by its text
    ],
)
def test_an_api_error_is_classified_by_its_status_else_its_text(
    message: str, kind: type[SessionFailed]
) -> None:
    reader, _ = read(init(), api_error(message))
    info = reader.failure_at(NOW)
    assert info is not None
    assert info.kind is kind
    assert reader.failure == info


@pytest.mark.parametrize(
    "lines",
    [
        [init(), result()],
        [init(), api_error("[API Error: 4011 odd]")],
        [init(), api_error("[API Error: teapot]")],
        [init(), api_error("API Error: 401 without its bracket")],
        [init()],  # no result: stopped, or could not start (stderr tells)
    ],
)
def test_what_no_rule_knows_and_what_did_not_fail_has_no_failure_class(lines: list[str]) -> None:
    reader, _ = read(*lines)
    assert reader.failure_at(NOW) is None


def test_a_failed_result_without_a_message_is_read_as_claudes() -> None:
    reader, _ = read(init(), result("error_max_turns", True, None))
    info = reader.failure_at(NOW)
    assert info is not None
    assert info.kind is TurnLimitReached
