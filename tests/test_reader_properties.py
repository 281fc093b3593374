"""Properties of every CLI's reader: ``feed`` and ``finish`` never raise, whatever a stream holds,
and what is read after it is always sound.

Fed arbitrary text; plausible events (one per branch of the readers, ``reader_events``) with
their values swapped for values of every wrong type, exhaustively and at random; and real capture
lines mutated (truncated, spliced, cut, values swapped for anything JSON can hold, nested deeper,
doubled). The event handlers are also called directly, so that the tests fail on a handler that
raises even though ``feed`` would swallow it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from capture_helpers import AnyReader, captures
from event_mutation import json_values, replaced, value_paths
from harness_helpers import jsonl, transcript_lines
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from reader_events import TEMPLATES

from thirdshift import Ended, SessionFailed, Usage
from thirdshift.harness import (
    ClaudeReader,
    CodexReader,
    GeminiReader,
    OpencodeReader,
    QwenReader,
    StreamReader,
)
from thirdshift.harness._base import finish_reading
from thirdshift.harness._events import JsonEventReader

ReaderType = (
    type[ClaudeReader]
    | type[CodexReader]
    | type[OpencodeReader]
    | type[GeminiReader]
    | type[QwenReader]
)
READER_TYPES = [ClaudeReader, CodexReader, OpencodeReader, GeminiReader, QwenReader]
# Claude's and Codex's readers are each fed both CLIs' captures, as they are both CLIs' events.
FED: dict[type[Any], tuple[str, ...]] = {
    ClaudeReader: ("claude", "codex"),
    CodexReader: ("claude", "codex"),
    OpencodeReader: ("opencode",),
    GeminiReader: ("gemini",),
    QwenReader: ("qwen",),
}
# The readers that report killed work and say the usage so far as a stream goes.
FOLLOW_WORK = (ClaudeReader, CodexReader)

exit_codes = st.none() | st.integers(min_value=-300, max_value=300)

CAPTURE_LINES: dict[type[Any], list[str]] = {
    reader_type: [line for name in captures(*FED[reader_type]) for line in transcript_lines(name)]
    for reader_type in READER_TYPES
}


def lines_of(reader_type: ReaderType) -> list[str]:
    templates = [json.dumps(event) + "\n" for event in TEMPLATES[reader_type]]
    return templates + CAPTURE_LINES[reader_type]


def assert_sound(reader: AnyReader) -> None:
    """Everything read after the stream is there, of its type, and consistent."""
    ended = reader.ended()
    assert isinstance(ended, Ended)
    assert ended.session_id is None or isinstance(ended.session_id, str)
    assert all(isinstance(work, str) for work in ended.killed)
    assert ended.killed == reader.killed
    assert ended.final_message is None or isinstance(ended.final_message, str)
    assert reader.summary is None or isinstance(reader.summary, str)
    assert reader.error is None or isinstance(reader.error, str)
    assert isinstance(reader.failed, bool)
    if reader.failed or type(reader) not in FOLLOW_WORK:
        assert reader.killed == ()
    usage = reader.usage
    assert ended.usage == usage
    so_far = reader.usage_so_far
    if type(reader) in FOLLOW_WORK:
        if so_far is not None:
            so_far_counts = (so_far.turns, so_far.input_tokens, so_far.output_tokens)
            assert all(
                count is None or (type(count) is int and count >= 0) for count in so_far_counts
            )
    else:
        assert so_far is None or so_far == usage  # said as it goes only where usage is
    if usage is not None:
        assert isinstance(usage, Usage)
        counts = (usage.turns, usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)
        assert all(count is None or (type(count) is int and count >= 0) for count in counts)
        assert usage.cost_usd is None or (math.isfinite(usage.cost_usd) and usage.cost_usd >= 0)
        assert all(isinstance(model, str) for model in usage.models)
    failure = reader.failure
    assert failure is None or (reader.failed and issubclass(failure.kind, SessionFailed))


def feed_all(reader: AnyReader, lines: list[str]) -> None:
    for line in lines:
        progress = reader.feed(line)
        assert isinstance(progress, list)
        assert all(isinstance(body, str) for body in progress)


def name_of(value: object) -> str:
    """A test id: the reader's class name, or an event's type."""
    if isinstance(value, type):
        return value.__name__
    assert isinstance(value, dict)
    return str(value.get("type"))


every_reader = pytest.mark.parametrize("reader_type", READER_TYPES, ids=name_of)


@every_reader
@given(lines=st.lists(st.text(), max_size=8), exit_code=exit_codes)
@example(lines=["{", "{}", '{"type": null}', "[" * 50_000, '{"a":' * 50_000], exit_code=0)
def test_feed_and_finish_never_raise_on_arbitrary_text(
    reader_type: ReaderType, lines: list[str], exit_code: int | None
) -> None:
    reader = reader_type(Path("/w"))
    feed_all(reader, lines)
    finish_reading(reader, exit_code)
    assert_sound(reader)


@every_reader
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


@every_reader
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
    ids=name_of,
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


@every_reader
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


@pytest.mark.parametrize("reader_type", [ClaudeReader, CodexReader], ids=name_of)
def test_a_huge_line_is_condensed(reader_type: type[ClaudeReader] | type[CodexReader]) -> None:
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


# One ending for Claude's and Codex's


@pytest.mark.parametrize("reader_type", [ClaudeReader, CodexReader], ids=name_of)
def test_both_readers_take_their_ending_from_the_one_base(
    reader_type: type[ClaudeReader] | type[CodexReader],
) -> None:
    # #8.15: the session id, final message and ended() were written out twice.
    for shared in ("session_id", "final_message", "ended"):
        owner = next(cls for cls in reader_type.__mro__ if shared in vars(cls))
        assert owner is JsonEventReader, shared
    assert reader_type().ended() == Ended(session_id=None, killed=(), final_message=None)


# finish


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
