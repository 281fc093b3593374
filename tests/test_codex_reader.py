"""Reading Codex's exec --json: each rule of the reader, and every Codex transcript."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harness_helpers import WORKTREE, jsonl, read_all, transcript_lines

from thirdshift import Ended
from thirdshift.harness import CodexReader

THREAD = "01a22ac8-2f15-7e40-9412-9d1a398a7bf5"
TREE = "/home/dev/work/cc"


def started(thread_id: Any = THREAD) -> str:
    return jsonl(type="thread.started", thread_id=thread_id)


def item(event: str = "item.started", **fields: Any) -> str:
    return jsonl(type=event, item=fields)


def command(
    item_id: str = "item_0",
    cmd: Any = "/bin/bash -lc 'sleep 300'",
    status: str = "in_progress",
    event: str = "item.started",
) -> str:
    return item(event, id=item_id, type="command_execution", command=cmd, status=status)


def collab(
    item_id: str = "item_5",
    status: str = "in_progress",
    prompt: Any = None,
    event: str = "item.started",
    tool: Any = "spawn_agent",
) -> str:
    fields: dict[str, Any] = {"id": item_id, "type": "collab_tool_call", "status": status}
    if tool is not None:
        fields["tool"] = tool
    if prompt is not None:
        fields["prompt"] = prompt
    return item(event, **fields)


def message(text: Any, item_id: str = "item_9") -> str:
    return item("item.completed", id=item_id, type="agent_message", text=text)


def completed(input_tokens: Any = 40, cached: Any = 5, output_tokens: Any = 16) -> str:
    usage = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    if cached is not None:
        usage["cached_input_tokens"] = cached
    return jsonl(type="turn.completed", usage=usage)


def failed(text: Any = "boom") -> str:
    return jsonl(type="turn.failed", error={"message": text})


def read(*lines: str) -> tuple[CodexReader, list[str]]:
    reader = CodexReader(Path(TREE))
    return reader, read_all(reader, list(lines))


# The thread


def test_thread_started_starts_the_session() -> None:
    reader, progress = read(started())
    assert progress == ["session started"]
    assert reader.session_id == THREAD


def test_only_the_first_thread_id_counts() -> None:
    reader, progress = read(started(), started("other"))
    assert progress == ["session started"]
    assert reader.session_id == THREAD


@pytest.mark.parametrize("thread_id", [None, 7, ["x"]])
def test_a_thread_started_without_a_string_id_is_skipped(thread_id: Any) -> None:
    reader, progress = read(started(thread_id), started())
    assert progress == ["session started"]
    assert reader.session_id == THREAD


# Item lines


def test_a_command_gives_one_line_at_its_first_sight() -> None:
    _, progress = read(
        started(),
        command(status="in_progress"),
        command(status="in_progress", event="item.updated"),
        command(status="completed", event="item.completed"),
    )
    assert progress == ["session started", "$ sleep 300"]


@pytest.mark.parametrize(
    ("cmd", "line"),
    [
        ("/bin/bash -lc 'git commit -m x && git push'", "commit and push"),
        ("bash -lc 'echo '\\''hi'\\'''", "$ echo 'hi'"),
        ('/bin/zsh -c "grep \\"git push\\" README.md"', '$ grep "git push" README.md'),
        ("cargo test", "$ cargo test"),
        ("/bin/bash -lc 'cd src\nmake'", "$ cd src"),
    ],
)
def test_a_command_line_is_the_bash_line_of_the_unwrapped_command(cmd: str, line: str) -> None:
    _, progress = read(command(cmd=cmd))
    assert progress == [line]


def test_a_command_without_a_string_command_gives_no_line() -> None:
    _, progress = read(command(cmd=["bash", "-lc", "x"]))
    assert progress == []


def test_a_file_change_gives_a_line_per_change_relative_to_the_worktree() -> None:
    changes = [
        {"path": f"{TREE}/src/new.py", "kind": "add"},
        {"path": f"{TREE}/old.py", "kind": "delete"},
        {"path": f"{TREE}/src/run.py", "kind": "update"},
        {"path": "/etc/hosts", "kind": "update"},
        {"path": f"{TREE}/odd.py", "kind": ["strange"]},
        {"kind": "add"},
        "not a change",
    ]
    _, progress = read(
        item("item.completed", id="item_2", type="file_change", changes=changes, status="completed")
    )
    assert progress == [
        "Add src/new.py",
        "Delete old.py",
        "Edit src/run.py",
        "Edit /etc/hosts",
        "Edit odd.py",
    ]


def test_a_file_change_without_a_list_of_changes_gives_nothing() -> None:
    _, progress = read(item(id="item_2", type="file_change", changes="a.py"))
    assert progress == []


@pytest.mark.parametrize(
    ("fields", "line"),
    [
        (
            {"type": "mcp_tool_call", "server": "github", "tool": "search_issues"},
            "github search_issues",
        ),
        ({"type": "mcp_tool_call", "server": "github"}, "github ?"),
        ({"type": "mcp_tool_call", "tool": "search"}, "? search"),
        ({"type": "mcp_tool_call"}, "? ?"),
        ({"type": "web_search", "query": "pluggy hookimpl"}, "web search pluggy hookimpl"),
        ({"type": "web_search"}, "web search"),
        (
            {"type": "collab_tool_call", "tool": "spawn_agent", "status": "completed"},
            "agent spawn_agent",
        ),
        ({"type": "collab_tool_call", "status": "completed"}, "agent ?"),
    ],
)
def test_other_items_give_their_line(fields: dict[str, Any], line: str) -> None:
    _, progress = read(item("item.completed", id="item_3", **fields))
    assert progress == [line]


@pytest.mark.parametrize(
    "fields",
    [
        {"type": "reasoning", "text": "thinking"},
        {"type": "todo_list", "items": []},
        {"type": "agent_message", "text": "hello"},
        {"type": "error", "message": "a warning"},
        {"type": "something_new"},
        {"type": 5},
        {},
    ],
)
def test_any_other_item_gives_no_line(fields: dict[str, Any]) -> None:
    _, progress = read(item("item.completed", id="item_4", **fields))
    assert progress == []


def test_a_long_detail_is_shortened() -> None:
    _, progress = read(item("item.completed", id="i", type="web_search", query="q" * 150))
    assert progress == ["web search " + "q" * 100 + "…"]


# Final message and errors


def test_the_last_agent_message_is_the_final_message() -> None:
    reader, _ = read(started(), message("first", "item_1"), message("last", "item_2"), completed())
    assert reader.final_message == "last"


def test_an_agent_message_that_is_no_string_changes_nothing() -> None:
    reader, _ = read(message("kept", "item_1"), message(["x"], "item_2"))
    assert reader.final_message == "kept"


def test_an_error_event_alone_does_not_fail() -> None:
    reader, _ = read(
        started(),
        jsonl(type="error", message="Reconnecting... 1/5"),
        jsonl(type="error", message="Reconnecting... 2/5"),
        message("done"),
        completed(),
    )
    assert reader.failed is False
    assert reader.error == "Reconnecting... 2/5"


def test_an_error_item_is_the_last_error_but_no_failure() -> None:
    reader, _ = read(item("item.completed", id="e1", type="error", message="model warning"))
    assert reader.failed is False
    assert reader.error == "model warning"


def test_a_failed_turn_fails_with_its_error_and_reports_no_killed_work() -> None:
    reader, _ = read(
        started(),
        command(),
        jsonl(type="error", message="unexpected status 401 Unauthorized"),
        failed("unexpected status 401 Unauthorized: bad key"),
        completed(),
    )
    assert reader.failed is True
    assert reader.error == "unexpected status 401 Unauthorized: bad key"
    assert reader.killed == ()


def test_the_first_failed_turn_is_the_failure() -> None:
    reader, _ = read(failed("first"), failed("second"), jsonl(type="error", message="later"))
    assert reader.error == "first"


@pytest.mark.parametrize(
    "line",
    [
        jsonl(type="turn.failed"),
        jsonl(type="turn.failed", error="flat"),
        jsonl(type="turn.failed", error={"message": 3}),
    ],
)
def test_a_failed_turn_without_a_message_fails_as_turn_failed(line: str) -> None:
    reader, _ = read(line)
    assert reader.failed is True
    assert reader.error == "turn failed"


# Killed background work


def test_a_command_started_and_never_completed_is_killed_at_turn_completed() -> None:
    reader, _ = read(started(), command(), message("done"), completed())
    assert reader.killed == ("sleep 300",)


def test_a_command_re_emitted_as_completed_but_still_in_progress_is_killed() -> None:
    reader, _ = read(started(), command(status="in_progress", event="item.completed"), completed())
    assert reader.killed == ("sleep 300",)


def test_a_command_completed_before_turn_completed_is_not_killed() -> None:
    reader, _ = read(
        started(),
        command(),
        command(status="completed", event="item.completed"),
        completed(),
    )
    assert reader.killed == ()


@pytest.mark.parametrize("status", ["failed", "declined", None])
def test_a_command_whose_latest_status_is_not_in_progress_is_not_killed(status: Any) -> None:
    reader, _ = read(command(), command(status=status, event="item.updated"), completed())
    assert reader.killed == ()


def test_nothing_is_killed_before_turn_completed() -> None:
    reader, _ = read(started(), command())
    assert reader.killed == ()


def test_every_running_command_is_killed_in_order_of_first_sight() -> None:
    reader, _ = read(
        command("a", "/bin/bash -lc 'npm run watch'"),
        command("b", "/bin/bash -lc 'sleep 1'"),
        command("c", "python -m http.server"),
        command("b", "/bin/bash -lc 'sleep 1'", status="completed", event="item.completed"),
        completed(),
    )
    assert reader.killed == ("npm run watch", "python -m http.server")


def test_a_killed_command_is_not_shortened() -> None:
    long = "x" * 300
    reader, _ = read(command(cmd=f"bash -lc '{long}'"), completed())
    assert reader.killed == (long,)


def test_a_running_sub_agent_is_killed_work_named_by_its_prompt() -> None:
    reader, progress = read(
        collab(prompt="Run the whole test suite\nand report failures"), completed()
    )
    assert progress == ["agent spawn_agent"]
    assert reader.killed == ("agent spawn_agent: Run the whole test suite",)


def test_a_sub_agents_prompt_is_shortened() -> None:
    reader, _ = read(collab(prompt="p" * 150), completed())
    assert reader.killed == ("agent spawn_agent: " + "p" * 100 + "…",)


@pytest.mark.parametrize("prompt", [None, "", 7])
def test_a_running_sub_agent_without_a_prompt_is_named_by_its_tool(prompt: Any) -> None:
    reader, _ = read(collab(prompt=prompt), completed())
    assert reader.killed == ("agent spawn_agent",)


def test_a_finished_sub_agent_is_not_killed() -> None:
    reader, _ = read(collab(), collab(status="completed", event="item.completed"), completed())
    assert reader.killed == ()


def test_a_running_item_of_another_type_is_not_killed() -> None:
    reader, _ = read(
        item(id="m", type="mcp_tool_call", server="s", tool="t", status="in_progress"),
        completed(),
    )
    assert reader.killed == ()


# Summary


def test_the_summary_counts_tokens() -> None:
    reader, _ = read(completed(1200, 200, 345))
    assert reader.summary == "1200 input tokens (200 cached), 345 output tokens"


@pytest.mark.parametrize("cached", [None, "lots", True])
def test_cached_tokens_default_to_zero(cached: Any) -> None:
    reader, _ = read(completed(40, cached, 16))
    assert reader.summary == "40 input tokens (0 cached), 16 output tokens"


@pytest.mark.parametrize(
    ("tokens_in", "tokens_out"), [("40", 16), (40, None), (True, 16), (40.0, 16)]
)
def test_usage_without_whole_counts_gives_no_summary(tokens_in: Any, tokens_out: Any) -> None:
    reader, _ = read(completed(tokens_in, 0, tokens_out))
    assert reader.summary is None


def test_no_turn_completed_means_no_summary() -> None:
    reader, _ = read(started(), command())
    assert reader.summary is None


# Lines that are skipped


@pytest.mark.parametrize(
    "line",
    [
        "",
        "not json",
        "[1, 2]",
        "42",
        '{"type": "thread.started", "thread_id": "trunc',
        '{"type": 7}',
        '{"type": ["thread.started"]}',
        jsonl(type="item.started", item="command_execution"),
        jsonl(type="item.started", item=["x"]),
        jsonl(type="turn.started"),
        jsonl(type="turn.completed", usage="lots"),
        jsonl(type="error"),
        jsonl(type="error", message=["x"]),
        jsonl(type="system", subtype="init", session_id="claude"),
        '{"a":' * 100_000 + "1" + "}" * 100_000,
    ],
)
def test_unknown_and_malformed_lines_are_skipped(line: str) -> None:
    reader = CodexReader(Path(TREE))
    assert reader.feed(line) == []
    assert reader.ended() == Ended(session_id=None)
    assert (reader.summary, reader.failed, reader.error, reader.killed) == (None, False, None, ())


# Whole transcripts


def test_the_401_error_starts_as_the_issue_says() -> None:
    reader = CodexReader(WORKTREE)
    read_all(reader, transcript_lines("codex-api-401"))
    assert reader.error is not None
    assert reader.error.startswith("unexpected status 401 Unauthorized")


def test_a_huge_killed_command_is_cut_to_a_bounded_length() -> None:
    reader = CodexReader()
    command = {"id": "c", "type": "command_execution", "command": "y" * 10**6}
    for event in (
        {"type": "thread.started", "thread_id": "t"},
        {"type": "item.started", "item": {**command, "status": "in_progress"}},
        {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}},
    ):
        reader.feed(json.dumps(event))

    assert reader.killed == ("y" * 500 + "…",)
