"""Properties of both readers: ``feed`` never raises, whatever a stream holds.

Fed arbitrary text; plausible events (one per branch of the readers) with their values swapped
for values of every wrong type, exhaustively and at random; and real transcript lines mutated
(truncated, spliced, cut, values swapped for anything JSON can hold, nested deeper, doubled).
The event handlers are also called directly, so that the tests fail on a handler that raises
even though ``feed`` would swallow it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from event_mutation import json_values, replaced, value_paths
from harness_helpers import EXPECTED, jsonl, transcript_lines
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from thirdshift import Ended, SessionFailed, Usage
from thirdshift.harness import ClaudeReader, CodexReader
from thirdshift.harness.events import JsonEventReader

READERS = [ClaudeReader, CodexReader]
ReaderType = type[ClaudeReader] | type[CodexReader]

ALL_LINES = [line for name in sorted(EXPECTED) for line in transcript_lines(name)]


# Plausible events reaching every branch of both readers, beside the transcripts' own.
TEMPLATES: list[dict[str, Any]] = [
    {"type": "system", "subtype": "init", "session_id": "s1", "cwd": "/w", "apiKeySource": "none"},
    {"type": "system", "subtype": "task_started", "task_id": "b1", "description": "Run tests"},
    {"type": "system", "subtype": "task_updated", "task_id": "b1", "patch": {"status": "killed"}},
    {
        "type": "system",
        "subtype": "task_notification",
        "task_id": "b2",
        "status": "stopped",
        "summary": "Sleep",
    },
    {
        "type": "assistant",
        "message": {
            "content": [
                {"type": "tool_use", "name": "Bash", "input": {"command": "git commit -m x"}},
                {"type": "tool_use", "name": "Skill", "input": {"skill": "review"}},
                {
                    "type": "tool_use",
                    "name": "Read",
                    "input": {"file_path": "/w/a.py", "pattern": "p"},
                },
            ]
        },
    },
    {
        "type": "result",
        "subtype": "error_max_turns",
        "is_error": True,
        "result": "r",
        "errors": ["e1", "e2"],
        "num_turns": 3,
        "total_cost_usd": 0.25,
        "parent_tool_use_id": None,
    },
    {
        "type": "rate_limit_event",
        "rate_limit_info": {
            "status": "allowed_warning",
            "resetsAt": 1796101930,
            "rateLimitType": "five_hour",
            "utilization": 0.92,
        },
    },
    {"type": "rate_limit_event", "rate_limit_info": {"status": "rejected", "resetsAt": 1}},
    {"type": "system", "subtype": "api_retry", "error_status": 429, "error": "rate_limit"},
    {"type": "assistant", "message": {"content": []}, "error": "server_error"},
    {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "api_error_status": 529,
        "terminal_reason": "completed",
        "result": "You've hit your session limit · resets 5:12am (UTC)",
        "usage": {
            "input_tokens": 1,
            "cache_creation_input_tokens": 2,
            "cache_read_input_tokens": 3,
            "output_tokens": 4,
        },
        "modelUsage": {"m1": {}, "m2": {}},
        "num_turns": 1,
        "total_cost_usd": 0.0007,
    },
    {"type": "thread.started", "thread_id": "t1"},
    {
        "type": "item.started",
        "item": {
            "id": "c1",
            "type": "command_execution",
            "command": "/bin/bash -lc 'sleep 1'",
            "status": "in_progress",
        },
    },
    {
        "type": "item.updated",
        "item": {
            "id": "a1",
            "type": "collab_tool_call",
            "tool": "spawn",
            "prompt": "Run it\nnow",
            "status": "in_progress",
        },
    },
    {
        "type": "item.completed",
        "item": {
            "id": "f1",
            "type": "file_change",
            "changes": [{"path": "/w/a.py", "kind": "add"}, {"path": "/w/b.py", "kind": "update"}],
        },
    },
    {
        "type": "item.completed",
        "item": {"id": "m1", "type": "mcp_tool_call", "server": "gh", "tool": "search"},
    },
    {"type": "item.completed", "item": {"id": "w1", "type": "web_search", "query": "q"}},
    {"type": "item.completed", "item": {"id": "g1", "type": "agent_message", "text": "done"}},
    {"type": "item.completed", "item": {"id": "e1", "type": "error", "message": "warn"}},
    {
        "type": "turn.completed",
        "usage": {"input_tokens": 1, "cached_input_tokens": 2, "output_tokens": 3},
    },
    {"type": "turn.failed", "error": {"message": "boom"}},
    {
        "type": "turn.failed",
        "error": {"message": "You've hit your usage limit. Try again at 5:12 AM."},
    },
    {"type": "error", "message": "Reconnecting... 1/5"},
]
LINES = [json.dumps(event) + "\n" for event in TEMPLATES] + ALL_LINES


def assert_sound(reader: ClaudeReader | CodexReader) -> None:
    """Everything read after the stream is there, of its type, and consistent."""
    ended = reader.ended()
    assert isinstance(ended, Ended)
    assert ended.session_id is None or isinstance(ended.session_id, str)
    assert all(isinstance(work, str) for work in ended.killed)
    assert reader.summary is None or isinstance(reader.summary, str)
    assert reader.error is None or isinstance(reader.error, str)
    assert isinstance(reader.failed, bool)
    if reader.failed:
        assert reader.killed == ()
    assert ended.usage == reader.usage
    assert ended.usage is None or isinstance(ended.usage, Usage)
    so_far = reader.usage_so_far
    if so_far is not None:
        counts = (so_far.turns, so_far.input_tokens, so_far.output_tokens)
        assert all(type(count) is int and count >= 0 for count in counts)
    failure = reader.failure
    assert failure is None or (reader.failed and issubclass(failure.kind, SessionFailed))


def feed_all(reader: ClaudeReader | CodexReader, lines: list[str]) -> None:
    for line in lines:
        progress = reader.feed(line)
        assert isinstance(progress, list)
        assert all(isinstance(body, str) for body in progress)


@pytest.mark.parametrize("reader_type", READERS)
@given(lines=st.lists(st.text(), max_size=8))
@example(lines=["{", "{}", '{"type": null}', "[" * 50_000, '{"a":' * 50_000])
def test_feed_never_raises_on_arbitrary_text(reader_type: ReaderType, lines: list[str]) -> None:
    reader = reader_type(Path("/w"))
    feed_all(reader, lines)
    assert_sound(reader)


@pytest.mark.parametrize("reader_type", READERS)
@given(lines=st.lists(st.text(alphabet='{}[]":,0123456789.eE-tfn ul\\\n', max_size=60), max_size=8))
def test_feed_never_raises_on_json_like_text(reader_type: ReaderType, lines: list[str]) -> None:
    reader = reader_type(Path("/w"))
    feed_all(reader, ["{" + line for line in lines])
    assert_sound(reader)


@st.composite
def mutated_events(draw: st.DrawFn) -> dict[str, Any]:
    """A plausible event with one to three of its values swapped for anything JSON holds."""
    mutated = draw(st.sampled_from(TEMPLATES))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(value_paths(mutated)))
        mutated = replaced(mutated, path, draw(json_values))
    return mutated if isinstance(mutated, dict) else {"type": mutated}


@pytest.mark.parametrize("reader_type", READERS)
@given(
    before=st.lists(st.sampled_from(TEMPLATES), max_size=6),
    bad=st.lists(mutated_events(), min_size=1, max_size=4),
)
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_event_handling_itself_never_raises(
    reader_type: ReaderType, before: list[dict[str, Any]], bad: list[dict[str, Any]]
) -> None:
    """The handlers cope with any event shape on their own, not only thanks to feed's guard."""
    reader = reader_type(Path("/w"))
    for event in [*before, *bad]:
        progress = reader._event(event)
        assert all(isinstance(body, str) for body in progress)
    assert_sound(reader)


WRONG_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    1.5,
    float("nan"),
    10**400,
    "",
    "x",
    [],
    [1, "a"],
    {},
    {"type": "tool_use"},
    [[[[[[[[{"a": [[]]}]]]]]]]],
]


@pytest.mark.parametrize("reader_type", READERS)
@pytest.mark.parametrize("template", TEMPLATES, ids=lambda event: str(event.get("type")))
def test_every_value_of_every_event_may_have_any_type(
    reader_type: ReaderType, template: dict[str, Any]
) -> None:
    """Exhaustively: each value of each plausible event swapped, in turn, for each wrong one."""
    for path in value_paths(template):
        for wrong in WRONG_VALUES:
            event = replaced(template, path, wrong)
            reader = reader_type(Path("/w"))
            for before in TEMPLATES[:2]:
                reader._event(before)
            if isinstance(event, dict):
                assert all(isinstance(body, str) for body in reader._event(event))
            assert reader.feed(json.dumps(event)) is not None
            assert_sound(reader)


@st.composite
def mutated_lines(draw: st.DrawFn) -> str:
    line = draw(st.sampled_from(LINES))
    how = draw(st.sampled_from(["truncate", "splice", "delete", "replace", "wrap", "duplicate"]))
    if how == "truncate":
        return line[: draw(st.integers(0, len(line)))]
    if how == "splice":
        at = draw(st.integers(0, len(line)))
        return line[:at] + draw(st.text(max_size=10)) + line[at:]
    if how == "delete":
        start = draw(st.integers(0, len(line)))
        return line[:start] + line[draw(st.integers(start, len(line))) :]
    event = json.loads(line)
    if how == "replace":
        path = draw(st.sampled_from(value_paths(event)))
        return json.dumps(replaced(event, path, draw(json_values)))
    if how == "wrap":
        path = draw(st.sampled_from(value_paths(event)))
        inner = event
        for step in path:
            inner = inner[step]
        return json.dumps(replaced(event, path, [[[{"x": inner}]]]))
    return line.rstrip("\n") + line  # two objects on one line


@pytest.mark.parametrize("reader_type", READERS)
@given(
    before=st.lists(st.sampled_from(LINES), max_size=6), bad=st.lists(mutated_lines(), max_size=4)
)
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_feed_never_raises_on_mutated_transcript_lines(
    reader_type: ReaderType, before: list[str], bad: list[str]
) -> None:
    reader = reader_type(Path("/home/dev/work/cc"))
    feed_all(reader, [*before, *bad, *LINES])
    assert_sound(reader)


@pytest.mark.parametrize("reader_type", READERS)
def test_a_huge_line_is_condensed(reader_type: ReaderType) -> None:
    huge = "x" * 5_000_000
    if reader_type is ClaudeReader:
        line = jsonl(
            type="assistant",
            message={"content": [{"type": "tool_use", "name": "Bash", "input": {"command": huge}}]},
        )
    else:
        line = jsonl(
            type="item.started",
            item={"id": "i", "type": "command_execution", "command": f"bash -lc '{huge}'"},
        )
    assert reader_type(Path("/w")).feed(line) == ["$ " + "x" * 100 + "…"]


# One ending for both


@pytest.mark.parametrize("reader_type", READERS)
def test_both_readers_take_their_ending_from_the_one_base(reader_type: ReaderType) -> None:
    # #8.15: the session id, final message and ended() were written out twice.
    for shared in ("session_id", "final_message", "ended"):
        owner = next(cls for cls in reader_type.__mro__ if shared in vars(cls))
        assert owner is JsonEventReader, shared
    assert reader_type().ended() == Ended(session_id=None, killed=(), final_message=None)
