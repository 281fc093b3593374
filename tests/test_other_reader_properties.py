"""Properties of the opencode, Gemini CLI and Qwen Code readers: ``feed`` and ``finish`` never
raise, whatever a stream holds, and what is read after it is always sound.

Fed arbitrary text; plausible events (one per branch of the readers) with their values swapped
for values of every wrong type, exhaustively and at random; and real capture lines mutated. The
event handlers are also called directly, so that a handler that raises fails the tests even
though ``feed`` would swallow it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from capture_helpers import CAPTURES, READERS
from event_mutation import json_values, replaced, value_paths
from harness_helpers import transcript_lines
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from thirdshift import Ended, Usage
from thirdshift.harness import GeminiReader, OpencodeReader, QwenReader, StreamReader
from thirdshift.harness.finish import finish_reading

Reader = OpencodeReader | GeminiReader | QwenReader
ReaderType = type[OpencodeReader] | type[GeminiReader] | type[QwenReader]
READER_TYPES = [OpencodeReader, GeminiReader, QwenReader]

exit_codes = st.none() | st.integers(min_value=-300, max_value=300)

_TOKENS = {"input": 20, "output": 8, "reasoning": 0, "cache": {"read": 1, "write": 0}}

# Plausible events reaching every branch of the three readers.
TEMPLATES: dict[type[Any], list[dict[str, Any]]] = {
    OpencodeReader: [
        {"type": "step_start", "sessionID": "ses_1", "part": {"type": "step-start"}},
        {"type": "text", "sessionID": "ses_1", "part": {"id": "p1", "text": "done"}},
        {
            "type": "tool_use",
            "sessionID": "ses_1",
            "part": {"tool": "bash", "state": {"input": {"command": "git push"}}},
        },
        {"type": "tool_use", "part": {"tool": "read", "state": {"input": {"filePath": "/w/a"}}}},
        {"type": "tool_use", "part": {"tool": "skill", "state": {"input": {"name": "review"}}}},
        {"type": "step_finish", "part": {"reason": "stop", "tokens": _TOKENS, "cost": 0.5}},
        {
            "type": "error",
            "error": {"name": "APIError", "data": {"message": "m", "statusCode": 401}},
        },
    ],
    GeminiReader: [
        {"type": "init", "session_id": "s1", "model": "auto"},
        {"type": "message", "role": "user", "content": "hi"},
        {"type": "message", "role": "assistant", "content": "hel", "delta": True},
        {
            "type": "tool_use",
            "tool_name": "run_shell_command",
            "parameters": {"command": "sleep 1", "is_background": True},
        },
        {"type": "tool_use", "tool_name": "read_file", "parameters": {"file_path": "/w/a"}},
        {"type": "tool_use", "tool_name": "activate_skill", "parameters": {"name": "review"}},
        {"type": "tool_result", "tool_id": "t", "status": "success", "output": "x"},
        {"type": "error", "severity": "warning", "message": "loop"},
        {
            "type": "result",
            "status": "error",
            "error": {"type": "unknown", "message": "[API Error]"},
            "stats": {
                "input_tokens": 1,
                "cached": 2,
                "output_tokens": 3,
                "models": {"gemini-x": {}},
            },
        },
    ],
    QwenReader: [
        {"type": "system", "subtype": "init", "session_id": "s1", "cwd": "/w", "model": "m"},
        {
            "type": "system",
            "subtype": "task_updated",
            "task_id": "b1",
            "patch": {"status": "killed"},
        },
        {
            "type": "assistant",
            "message": {
                "content": [
                    {"type": "tool_use", "name": "run_shell_command", "input": {"command": "ls"}},
                    {"type": "tool_use", "name": "skill", "input": {"skill": "review"}},
                    {"type": "tool_use", "name": "read_file", "input": {"file_path": "/w/a"}},
                ]
            },
        },
        {
            "type": "result",
            "subtype": "error_during_execution",
            "is_error": True,
            "num_turns": 1,
            "result": "r",
            "usage": {"input_tokens": 1, "output_tokens": 2, "cache_read_input_tokens": 3},
            "error": {"message": "[API Error: 401]"},
            "parent_tool_use_id": None,
        },
    ],
}
CAPTURE_LINES: dict[type[Any], list[str]] = {
    reader_type: [
        line
        for name in sorted(CAPTURES)
        if READERS[CAPTURES[name].harness] is reader_type
        for line in transcript_lines(name)
    ]
    for reader_type in READER_TYPES
}


def lines_of(reader_type: ReaderType) -> list[str]:
    templates = [json.dumps(event) + "\n" for event in TEMPLATES[reader_type]]
    return templates + CAPTURE_LINES[reader_type]


def assert_sound(reader: Reader) -> None:
    """Everything read after the stream is there, of its type, and consistent."""
    ended = reader.ended()
    assert isinstance(ended, Ended)
    assert ended.session_id is None or isinstance(ended.session_id, str)
    assert ended.killed == reader.killed == ()
    assert ended.final_message is None or isinstance(ended.final_message, str)
    assert reader.summary is None or isinstance(reader.summary, str)
    assert reader.error is None or isinstance(reader.error, str)
    assert isinstance(reader.failed, bool)
    usage = reader.usage
    assert ended.usage == usage
    so_far = reader.usage_so_far
    assert so_far is None or so_far == usage  # said as it goes only where usage is
    if usage is not None:
        assert isinstance(usage, Usage)
        counts = (usage.turns, usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)
        assert all(count is None or (type(count) is int and count >= 0) for count in counts)
        assert usage.cost_usd is None or (math.isfinite(usage.cost_usd) and usage.cost_usd >= 0)
        assert all(isinstance(model, str) for model in usage.models)


def feed_all(reader: Reader, lines: list[str]) -> None:
    for line in lines:
        progress = reader.feed(line)
        assert isinstance(progress, list)
        assert all(isinstance(body, str) for body in progress)


@pytest.mark.parametrize("reader_type", READER_TYPES)
@given(lines=st.lists(st.text(), max_size=8), exit_code=exit_codes)
@example(lines=["{", "{}", '{"type": null}', "[" * 50_000, '{"a":' * 50_000], exit_code=0)
def test_feed_and_finish_never_raise_on_arbitrary_text(
    reader_type: ReaderType, lines: list[str], exit_code: int | None
) -> None:
    reader = reader_type(Path("/w"))
    feed_all(reader, lines)
    finish_reading(reader, exit_code)
    assert_sound(reader)


@pytest.mark.parametrize("reader_type", READER_TYPES)
@given(lines=st.lists(st.text(alphabet='{}[]":,0123456789.eE-tfn ul\\\n', max_size=60), max_size=8))
def test_feed_never_raises_on_json_like_text(reader_type: ReaderType, lines: list[str]) -> None:
    reader = reader_type(Path("/w"))
    feed_all(reader, ["{" + line for line in lines])
    assert_sound(reader)


@st.composite
def mutated_events(draw: st.DrawFn, reader_type: ReaderType) -> dict[str, Any]:
    """A plausible event with one to three of its values swapped for anything JSON holds."""
    mutated = draw(st.sampled_from(TEMPLATES[reader_type]))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(value_paths(mutated)))
        mutated = replaced(mutated, path, draw(json_values))
    return mutated if isinstance(mutated, dict) else {"type": mutated}


@pytest.mark.parametrize("reader_type", READER_TYPES)
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), exit_code=exit_codes)
def test_event_handling_itself_never_raises(
    reader_type: ReaderType, data: st.DataObject, exit_code: int | None
) -> None:
    """The handlers cope with any event shape on their own, not only thanks to feed's guard."""
    before = data.draw(st.lists(st.sampled_from(TEMPLATES[reader_type]), max_size=6))
    bad = data.draw(st.lists(mutated_events(reader_type), min_size=1, max_size=4))
    reader = reader_type(Path("/w"))
    for event in [*before, *bad]:
        progress = reader._event(event)
        assert all(isinstance(body, str) for body in progress)
    finish_reading(reader, exit_code)
    assert_sound(reader)


WRONG_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    1.5,
    float("nan"),
    float("-inf"),
    10**400,
    "",
    "x",
    [],
    [1, "a"],
    {},
    {"type": "tool_use"},
    [[[[[[[[{"a": [[]]}]]]]]]]],
]


@pytest.mark.parametrize(
    ("reader_type", "template"),
    [(reader_type, event) for reader_type in READER_TYPES for event in TEMPLATES[reader_type]],
    ids=lambda value: value.__name__ if isinstance(value, type) else str(value.get("type")),
)
def test_every_value_of_every_event_may_have_any_type(
    reader_type: ReaderType, template: dict[str, Any]
) -> None:
    """Exhaustively: each value of each plausible event swapped, in turn, for each wrong one."""
    for path in value_paths(template):
        for wrong in WRONG_VALUES:
            event = replaced(template, path, wrong)
            reader = reader_type(Path("/w"))
            for before in TEMPLATES[reader_type][:2]:
                reader._event(before)
            if isinstance(event, dict):
                assert all(isinstance(body, str) for body in reader._event(event))
            assert reader.feed(json.dumps(event)) is not None
            finish_reading(reader, 0)
            assert_sound(reader)


@st.composite
def mutated_lines(draw: st.DrawFn, reader_type: ReaderType) -> str:
    line = draw(st.sampled_from(lines_of(reader_type)))
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


@pytest.mark.parametrize("reader_type", READER_TYPES)
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), exit_code=exit_codes)
def test_feed_never_raises_on_mutated_capture_lines(
    reader_type: ReaderType, data: st.DataObject, exit_code: int | None
) -> None:
    lines = lines_of(reader_type)
    before = data.draw(st.lists(st.sampled_from(lines), max_size=6))
    bad = data.draw(st.lists(mutated_lines(reader_type), max_size=4))
    reader = reader_type(Path("/home/dev/work/cc"))
    feed_all(reader, [*before, *bad, *lines])
    finish_reading(reader, exit_code)
    assert_sound(reader)


def test_a_reader_whose_finish_raises_is_left_as_it_was() -> None:
    """``finish_reading`` never raises, as ``feed`` never does."""

    class Broken(GeminiReader):
        def finish(self, exit_code: int | None) -> None:
            raise RuntimeError("a reader's slip")

    reader = Broken()
    finish_reading(reader, 0)
    assert (reader.failed, reader.error) == (True, None)


def test_a_reader_without_a_finish_of_its_own_is_left_alone() -> None:
    reader = OpencodeReader()
    finish_reading(reader, 0)
    assert type(reader).finish is StreamReader.finish  # the contract's default: nothing changes
    assert (reader.failed, reader.error) == (True, None)
