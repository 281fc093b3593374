"""Reading Claude Code's stream-json: each rule of the reader, and every Claude transcript."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harness_helpers import WORKTREE, jsonl, read_all, transcript_lines

from thirdshift import Ended
from thirdshift.harness import ClaudeReader
from thirdshift.harness._usage import cost_text

CWD = "/home/dev/work/cc"
SESSION = "1260b204-2d0d-4329-a0ab-79b173470dd3"


def init(session_id: str | None = SESSION, cwd: str = CWD, **more: Any) -> str:
    event: dict[str, Any] = {"type": "system", "subtype": "init", "cwd": cwd, **more}
    if session_id is not None:
        event["session_id"] = session_id
    return jsonl(**event)


def tool_use(name: str | None, tool_input: Any = None, **block: Any) -> dict[str, Any]:
    used: dict[str, Any] = {"type": "tool_use", "id": "toolu_1", **block}
    if name is not None:
        used["name"] = name
    if tool_input is not None:
        used["input"] = tool_input
    return used


def assistant(*content: dict[str, Any]) -> str:
    return jsonl(type="assistant", message={"id": "msg_1", "content": list(content)})


def result(
    subtype: str = "success",
    is_error: bool = False,
    text: Any = "done",
    turns: Any = 2,
    cost: Any = 0.5,
    **more: Any,
) -> str:
    return jsonl(
        type="result",
        subtype=subtype,
        is_error=is_error,
        result=text,
        num_turns=turns,
        total_cost_usd=cost,
        **more,
    )


def task_started(task_id: str = "b1", description: str = "Run the tests") -> str:
    return jsonl(type="system", subtype="task_started", task_id=task_id, description=description)


def task_killed(task_id: str = "b1") -> str:
    return jsonl(type="system", subtype="task_updated", task_id=task_id, patch={"status": "killed"})


def task_stopped(task_id: str = "b1", summary: str | None = None, status: str = "stopped") -> str:
    event: dict[str, Any] = {
        "type": "system",
        "subtype": "task_notification",
        "task_id": task_id,
        "status": status,
    }
    if summary is not None:
        event["summary"] = summary
    return jsonl(**event)


def read(*lines: str) -> tuple[ClaudeReader, list[str]]:
    reader = ClaudeReader(Path("/elsewhere"))
    return reader, read_all(reader, list(lines))


# The first init


def test_the_first_init_starts_the_session() -> None:
    reader, progress = read(init())
    assert progress == ["session started"]
    assert reader.session_id == SESSION


def test_only_the_first_init_counts() -> None:
    reader, progress = read(
        init(),
        init(session_id="other", cwd="/other", apiKeySource="none"),
        assistant(tool_use("Read", {"file_path": f"{CWD}/a.py"})),
        result(),
    )
    assert progress == ["session started", "Read a.py"]
    assert reader.session_id == SESSION
    assert reader.summary == "2 turns, $0.50"  # not "at API prices": that was a later init


def test_an_init_without_a_session_id_leaves_it_none() -> None:
    reader, progress = read(init(session_id=None), init(session_id="late"))
    assert progress == ["session started"]
    assert reader.session_id is None


def test_a_session_id_that_is_no_string_is_none() -> None:
    reader, _ = read(jsonl(type="system", subtype="init", session_id=42))
    assert reader.session_id is None


def test_on_a_subscription_the_cost_is_at_api_prices() -> None:
    reader, _ = read(init(apiKeySource="none"), result(turns=3, cost=1.234))
    assert reader.summary == "3 turns, $1.23 at API prices"


def test_with_an_api_key_the_cost_is_plain() -> None:
    reader, _ = read(init(apiKeySource="ANTHROPIC_API_KEY"), result(turns=3, cost=1.236))
    assert reader.summary == "3 turns, $1.24"


# Tool lines


def test_several_tool_uses_in_one_message_give_a_line_each() -> None:
    _, progress = read(
        init(),
        assistant(
            {"type": "text", "text": "Let me look."},
            tool_use("Read", {"file_path": f"{CWD}/src/run.py"}),
            tool_use("Bash", {"command": "cargo test"}),
            tool_use("TodoWrite", {"todos": []}),
        ),
    )
    assert progress == ["session started", "Read src/run.py", "$ cargo test", "TodoWrite"]


@pytest.mark.parametrize(
    ("name", "tool_input", "line"),
    [
        ("Edit", {"file_path": f"{CWD}/src/run.py", "old_string": "a"}, "Edit src/run.py"),
        ("Read", {"file_path": "/etc/hosts"}, "Read /etc/hosts"),
        ("Write", {"file_path": f"{CWD}2/x.py"}, f"Write {CWD}2/x.py"),
        ("Grep", {"pattern": "fn main", "path": CWD}, "Grep fn main"),
        ("Glob", {"pattern": f"{CWD}/src/*.py"}, "Glob src/*.py"),
        ("Task", {"description": "Explore the parser", "prompt": "…"}, "Task Explore the parser"),
        (
            "WebFetch",
            {"url": "https://example.com/a", "prompt": "x"},
            "WebFetch https://example.com/a",
        ),
        ("WebSearch", {"query": "pluggy entry points"}, "WebSearch pluggy entry points"),
        ("TodoWrite", {"todos": [{"content": "x"}]}, "TodoWrite"),
        ("TaskStop", {"task_id": "b1"}, "TaskStop"),
        ("mcp__github__search", {}, "mcp__github__search"),
        ("Edit", None, "Edit"),
        ("Edit", "not an object", "Edit"),
        ("Read", {"file_path": 7, "pattern": "p"}, "Read p"),
        ("Read", {"file_path": "", "pattern": "p"}, "Read p"),
        ("Grep", {"file_path": "a.py", "pattern": "p"}, "Grep a.py"),  # file_path comes first
        ("Skill", {"skill": "review"}, "skill review"),
        ("Skill", {}, "skill ?"),
        ("Skill", {"skill": 3}, "skill ?"),
        ("Bash", {"command": "git commit -m x && git push"}, "commit and push"),
        ("Bash", {"command": "grep 'git push' README.md"}, "$ grep 'git push' README.md"),
        ("Bash", {"command": "make\nmake install"}, "$ make"),
        ("Bash", {}, "Bash"),
    ],
)
def test_a_tool_use_gives_its_line(name: str, tool_input: Any, line: str) -> None:
    _, progress = read(init(), assistant(tool_use(name, tool_input)))
    assert progress == ["session started", line]


def test_every_detail_is_shortened() -> None:
    long = "p" * 150
    _, progress = read(
        init(),
        assistant(
            tool_use("Grep", {"pattern": long}),
            tool_use("Bash", {"command": "echo " + long}),
            tool_use("Skill", {"skill": long}),
            tool_use("Read", {"file_path": f"{CWD}/{long}"}),
        ),
    )
    assert progress[1:] == [
        "Grep " + "p" * 100 + "…",
        "$ " + ("echo " + long)[:100] + "…",
        "skill " + "p" * 100 + "…",
        "Read " + "p" * 100 + "…",  # made relative first, then shortened
    ]


def test_without_an_init_paths_are_relative_to_the_worktree() -> None:
    reader = ClaudeReader(Path("/w"))
    assert reader.feed(assistant(tool_use("Edit", {"file_path": "/w/a.py"}))) == ["Edit a.py"]


def test_paths_are_relative_to_the_sessions_cwd_not_the_worktree() -> None:
    reader = ClaudeReader(Path("/w"))
    reader.feed(init(cwd="/real/w"))
    assert reader.feed(assistant(tool_use("Edit", {"file_path": "/real/w/a.py"}))) == ["Edit a.py"]
    assert reader.feed(assistant(tool_use("Edit", {"file_path": "/w/a.py"}))) == ["Edit /w/a.py"]


@pytest.mark.parametrize(
    "line",
    [
        assistant(tool_use(None, {"file_path": "/x"})),  # a tool_use without a name
        assistant(tool_use(7, {"file_path": "/x"})),  # type: ignore[arg-type]
        assistant({"type": "text", "text": "hello"}),
        jsonl(type="assistant", message={"content": "Read /etc/hosts"}),  # content as a string
        jsonl(type="assistant", message={"content": {"type": "tool_use", "name": "Read"}}),
        jsonl(type="assistant", message="hello"),
        jsonl(type="assistant"),
        jsonl(type="assistant", message={"content": [None, 1, "tool_use", []]}),
    ],
)
def test_assistant_lines_without_a_named_tool_use_give_nothing(line: str) -> None:
    _, progress = read(init(), line)
    assert progress == ["session started"]


# Killed background work


def test_a_task_killed_after_the_last_result_is_killed_work() -> None:
    reader, progress = read(init(), task_started(), result(), task_killed(), task_stopped())
    assert reader.killed == ("Run the tests",)
    assert progress == ["session started"]  # the kill itself gives no line


def test_a_stopped_notification_and_a_killed_update_of_one_task_count_once() -> None:
    reader, _ = read(
        init(), task_started(), result(), task_killed(), task_stopped(), task_stopped()
    )
    assert reader.killed == ("Run the tests",)


@pytest.mark.parametrize("kill", [task_killed(), task_stopped()])
def test_either_event_alone_is_a_kill(kill: str) -> None:
    reader, _ = read(init(), task_started(), result(), kill)
    assert reader.killed == ("Run the tests",)


def test_a_task_killed_before_a_later_result_is_not_killed_work() -> None:
    reader, _ = read(init(), task_started(), task_killed(), task_stopped(), result())
    assert reader.killed == ()


def test_kills_after_an_early_result_but_before_the_last_do_not_count() -> None:
    reader, _ = read(init(), task_started(), result(), task_killed(), init(), result())
    assert reader.killed == ()


def test_a_turn_taken_to_read_a_notification_keeps_the_kills_it_follows() -> None:
    notified = result(origin={"kind": "task-notification"})
    reader, _ = read(init(), task_started(), result(), task_stopped(), init(), notified)
    assert reader.killed == ("Run the tests",)


def test_the_real_claude_stopped_in_its_grace_then_reading_the_notification() -> None:
    # Claude 2.1.197 SIGTERMed by the after-result watchdog, caught taking the stopped task's
    # notification up in a turn of its own before it exited (1 play in 4 here).
    # Kept apart from tests/transcripts: thirdshift stopped this CLI, so its exit status is the
    # stop's, and nothing of the captures' exit-code rules holds for it.
    capture = (
        Path(__file__).parent / "captures_stopped" / "claude-stopped-in-grace-then-notified.jsonl"
    )
    reader = ClaudeReader(WORKTREE)
    read_all(reader, capture.read_text(encoding="utf-8").splitlines(keepends=True))
    assert reader.killed == ("sleep 300",)
    assert reader.final_message == "Started the tests."
    assert not reader.failed


def test_several_killed_tasks_keep_their_order() -> None:
    reader, _ = read(
        init(),
        task_started("b1", "Run the tests"),
        task_started("b2", "Build the docs"),
        result(),
        task_killed("b2"),
        task_killed("b1"),
        task_stopped("b2"),
    )
    assert reader.killed == ("Build the docs", "Run the tests")


def test_a_kill_without_task_started_is_described_by_its_summary() -> None:
    reader, _ = read(init(), result(), task_stopped("b9", summary="Sleep a while"))
    assert reader.killed == ("Sleep a while",)


def test_a_kill_without_description_or_summary_is_described_by_its_task_id() -> None:
    reader, _ = read(init(), result(), task_killed("b9"))
    assert reader.killed == ("b9",)


def test_a_task_named_only_by_its_id_takes_a_later_events_summary() -> None:
    reader, _ = read(init(), result(), task_killed("b9"), task_stopped("b9", summary="Sleep"))
    assert reader.killed == ("Sleep",)


def test_the_task_started_description_beats_the_summary() -> None:
    reader, _ = read(init(), task_started(), result(), task_stopped(summary="Something else"))
    assert reader.killed == ("Run the tests",)


@pytest.mark.parametrize(
    "line",
    [
        task_stopped(status="completed"),
        task_stopped(status="failed"),
        jsonl(type="system", subtype="task_updated", task_id="b1", patch={"status": "completed"}),
        jsonl(type="system", subtype="task_updated", task_id="b1", patch="killed"),
        jsonl(type="system", subtype="task_updated", task_id="b1", status="killed"),
        jsonl(type="system", subtype="task_updated", task_id=1, patch={"status": "killed"}),
        jsonl(type="system", subtype="task_notification", status="stopped", summary="no id"),
    ],
)
def test_other_task_events_are_no_kill(line: str) -> None:
    reader, _ = read(init(), task_started(), result(), line)
    assert reader.killed == ()


# Results


def test_the_last_result_holds_the_final_message() -> None:
    reader, _ = read(init(), result(text="first"), result(text="last"))
    assert reader.final_message == "last"
    assert reader.failed is False
    assert reader.error is None


def test_a_result_that_is_no_string_is_no_final_message() -> None:
    reader, _ = read(init(), result(text="first"), result(text=["a"]))
    assert reader.final_message is None


@pytest.mark.parametrize("subtype", ["error_max_turns", "error_during_execution"])
def test_an_error_result_fails_and_reports_no_killed_work(subtype: str) -> None:
    reader, _ = read(
        init(), task_started(), result(subtype=subtype, text=None), task_killed(), task_stopped()
    )
    assert reader.failed is True
    assert reader.killed == ()
    assert reader.error == subtype  # no errors list and no result text: the subtype


def test_a_success_with_is_error_fails_and_reports_no_killed_work() -> None:
    reader, _ = read(
        init(), task_started(), result(is_error=True, text="Invalid API key"), task_killed()
    )
    assert reader.failed is True
    assert reader.killed == ()
    assert reader.error == "Invalid API key"
    assert reader.final_message == "Invalid API key"


def test_is_error_must_be_true_itself() -> None:
    reader, _ = read(init(), result(is_error="yes"))  # type: ignore[arg-type]
    assert reader.failed is False


def test_a_result_without_a_subtype_fails() -> None:
    reader, _ = read(init(), jsonl(type="result", result="??"))
    assert reader.failed is True
    assert reader.error == "??"


def test_a_failed_results_error_is_its_errors_joined_by_newlines() -> None:
    reader, _ = read(
        init(),
        result(
            subtype="error_during_execution",
            text="",
            errors=["No conversation found with session ID: x", 3, "second"],
        ),
    )
    assert reader.error == "No conversation found with session ID: x\nsecond"


def test_a_later_successful_result_clears_the_failure() -> None:
    reader, _ = read(init(), result(subtype="error_max_turns"), result())
    assert reader.failed is False
    assert reader.error is None


def test_a_subagents_result_is_not_the_sessions() -> None:
    reader, _ = read(
        init(),
        task_started(),
        result(),
        task_killed(),
        result(subtype="error_max_turns", text="sub", parent_tool_use_id="toolu_9"),
    )
    assert reader.killed == ("Run the tests",)
    assert reader.failed is False
    assert reader.final_message == "done"


def test_a_result_with_a_null_parent_is_the_sessions() -> None:
    reader, _ = read(init(), result(text="top", parent_tool_use_id=None))
    assert reader.final_message == "top"


# Summary


def test_no_result_means_no_summary() -> None:
    reader, _ = read(init())
    assert reader.summary is None
    assert reader.final_message is None
    assert reader.failed is False


@pytest.mark.parametrize(
    ("turns", "cost"),
    [("many", 0.5), (2, "0.5"), (True, 0.5), (2, False), (2.0, 0.5), (None, 0.5), (2, None)],
)
def test_a_result_without_both_figures_gives_no_summary(turns: Any, cost: Any) -> None:
    reader, _ = read(init(), result(text="still read", turns=turns, cost=cost))
    assert reader.summary is None
    assert reader.final_message == "still read"  # the rest of the result still counts


def test_an_integer_cost_is_a_cost() -> None:
    reader, _ = read(init(), result(turns=1, cost=0))
    assert reader.summary == "1 turn, $0.00"


def test_the_summary_is_kept_from_the_last_result_carrying_both() -> None:
    reader, _ = read(init(), result(turns=4, cost=2), result(turns="x", cost=None))
    assert reader.summary == "4 turns, $2.00"


def test_a_cost_too_large_for_a_float_is_no_cost() -> None:
    reader, progress = read(
        init(),
        '{"type":"result","subtype":"success","num_turns":1,"total_cost_usd":1' + "0" * 400 + "}",
    )
    assert reader.summary is None
    assert progress == ["session started"]


@pytest.mark.parametrize("cost", [-1e308, -5, -0.0001, 1e308, 10**30, 12.5, 0])
def test_the_summary_shows_the_cost_as_the_record_does(cost: float) -> None:
    # A forged total_cost_usd of -1e308 printed 310 digits in the "session ended" line (#26 L8),
    # where the record says none.
    reader, _ = read(init(), result(turns=2, cost=cost))

    assert reader.usage is not None
    recorded = reader.usage.cost_usd
    if recorded is None:
        assert reader.summary is None
    else:
        assert reader.summary == f"2 turns, {cost_text(recorded)}"
        assert len(reader.summary) < 30


# Lines that are skipped


@pytest.mark.parametrize(
    "line",
    [
        "",
        "\n",
        "not json",
        "[1, 2]",
        "42",
        '"system"',
        "null",
        '{"type": "system", "subtype": "init", "session_id": "trunc',
        '{"type": 7}',
        "{}",
        jsonl(subtype="init", session_id="no-type"),
        jsonl(type="user", message={"content": [{"type": "tool_use", "name": "Read"}]}),
        jsonl(type="stream_event", event={"type": "content_block_start"}),
        jsonl(type="system", subtype="api_retry", attempt=1),
        jsonl(type="SYSTEM", subtype="init", session_id="caps"),
        jsonl(type="result", subtype="success", num_turns="many", parent_tool_use_id="t"),
        '{"type": "system", "subtype": "init"' + "]" * 10,
        "{" * 100_000,
        '{"a":' * 100_000 + "1" + "}" * 100_000,
        "\x00\xff\ud800",
    ],
)
def test_unknown_and_malformed_lines_are_skipped(line: str) -> None:
    reader = ClaudeReader(Path("/w"))
    assert reader.feed(line) == []
    assert reader.ended() == Ended(session_id=None)
    assert (reader.summary, reader.failed, reader.error) == (None, False, None)


def test_a_line_with_surrounding_whitespace_is_read() -> None:
    reader = ClaudeReader(Path("/w"))
    assert reader.feed("  " + init().strip() + "  \r\n") == ["session started"]


# Whole transcripts


def test_the_background_kill_is_only_seen_after_the_result() -> None:
    lines = transcript_lines("claude-bg-skipperms")
    reader = ClaudeReader(WORKTREE)
    for line in lines[:7]:  # up to and including the result
        reader.feed(line)
    assert not reader.killed
    for line in lines[7:]:
        reader.feed(line)
    assert reader.killed == ("Sleep for five minutes in the background",)


def test_a_huge_killed_description_is_cut_to_a_bounded_length() -> None:
    reader = ClaudeReader()
    for event in (
        {"type": "system", "subtype": "init", "session_id": "s"},
        {"type": "system", "subtype": "task_started", "task_id": "t", "description": "x" * 10**6},
        {"type": "result", "subtype": "success", "is_error": False, "result": "ok"},
        {
            "type": "system",
            "subtype": "task_updated",
            "task_id": "t",
            "patch": {"status": "killed"},
        },
    ):
        reader.feed(json.dumps(event))

    assert reader.killed == ("x" * 500 + "…",)


def test_a_background_task_never_said_to_end_is_still_running() -> None:
    reader = ClaudeReader()
    for event in (
        {"type": "system", "subtype": "task_started", "task_id": "a", "description": "pytest"},
        {"type": "system", "subtype": "task_started", "task_id": "b", "description": "npm test"},
        {"type": "system", "subtype": "task_started", "task_id": "c", "description": "sleep 9"},
        {
            "type": "system",
            "subtype": "task_updated",
            "task_id": "a",
            "patch": {"status": "completed"},
        },
        {"type": "system", "subtype": "task_notification", "task_id": "c", "status": "completed"},
        {"type": "result", "subtype": "success", "is_error": False, "result": "ok"},
    ):
        reader.feed(json.dumps(event))
    assert reader.still_running == ("npm test",)
    assert reader.killed == ()
