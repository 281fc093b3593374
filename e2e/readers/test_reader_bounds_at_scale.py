"""What a hostile stream can make each CLI's reader keep is bounded, whatever its length (#12.7):
a hundred thousand lines and more, seconds a test, so in the slow tier (tests/test_reader_bounds.py
holds the cuts themselves).

Memory is measured by counting what the reader keeps (characters of every string it holds,
entries of every container), not by RSS, so that the bound is exact and machine-independent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from thirdshift.harness import ClaudeReader, CodexReader, GeminiReader, OpencodeReader, QwenReader
from thirdshift.harness._lines import (
    MAX_ID,
    MAX_KILLED,
    MAX_KILLED_LISTED,
    MAX_MESSAGE,
    MAX_TRACKED,
)

TASKS = 100_000
DESCRIPTION = 5_000
# Every task or item a reader follows: its id, its description, a little for the container.
BOUND = 2 * MAX_TRACKED * (MAX_ID + MAX_KILLED + 10) + 2 * MAX_MESSAGE
# opencode, Gemini and Qwen follow no work: one message, its pieces being joined, small change.
MESSAGE_BOUND = 2 * MAX_MESSAGE + 10_000
PIECES = 200_000
NOTE = " more characters in the Session log)"
AnyReader = ClaudeReader | CodexReader | OpencodeReader | GeminiReader | QwenReader


def kept(value: object, seen: set[int] | None = None) -> int:
    """Characters of every string ``value`` holds, plus one per container entry, deeply."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(1 + kept(k, seen) + kept(v, seen) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return sum(1 + kept(v, seen) for v in value)
    if hasattr(value, "__dict__"):
        return kept(vars(value), seen)
    return 0


def most_kept(reader: AnyReader, lines: Iterator[str]) -> int:
    """The most ``reader`` kept while reading ``lines`` (looked at every 10,000 lines)."""
    most = 0
    for index, text in enumerate(lines):
        reader.feed(text)
        if index % 10_000 == 0:
            most = max(most, kept(reader))
    return max(most, kept(reader))


def line(**event: Any) -> str:
    return json.dumps(event)


def claude_tasks(count: int) -> Iterator[str]:
    yield line(type="system", subtype="init", session_id="s1", cwd="/w")
    for index in range(count):
        description = f"{index:06d}" + "d" * DESCRIPTION
        yield line(
            type="system", subtype="task_started", task_id=f"t{index}", description=description
        )
    yield line(type="result", subtype="success", is_error=False, result="done")
    for index in reversed(range(count)):  # the newest first: its description is still kept
        yield line(
            type="system", subtype="task_notification", task_id=f"t{index}", status="stopped"
        )


def test_100k_claude_task_descriptions_of_5kb_keep_the_reader_bounded() -> None:
    reader = ClaudeReader()

    assert (
        most_kept(reader, claude_tasks(TASKS)) < BOUND
    )  # against TASKS * DESCRIPTION = 500 million characters sent
    killed = reader.killed
    assert len(killed) == MAX_KILLED_LISTED
    assert killed[-1] == f"and {TASKS - MAX_KILLED_LISTED + 1} more"
    # The newest descriptions are the ones kept, each shortened as it was stored; the oldest
    # were forgotten, so those tasks are named by their ids.
    assert killed[0] == f"{TASKS - 1:06d}" + "d" * (MAX_KILLED - 6) + "…"


def codex_items(count: int) -> Iterator[str]:
    yield line(type="thread.started", thread_id="th1")
    yield line(type="turn.started")
    for index in range(count):
        command = f"/bin/bash -lc 'sleep {index:06d}" + " x" * (DESCRIPTION // 2) + "'"
        item = {"id": f"item_{index}", "type": "command_execution", "command": command}
        yield line(type="item.started", item={**item, "status": "in_progress"})
    yield line(type="turn.completed", usage={"input_tokens": 1, "output_tokens": 1})


def test_100k_codex_commands_of_5kb_left_running_keep_the_reader_bounded() -> None:
    reader = CodexReader()

    assert most_kept(reader, codex_items(TASKS)) < BOUND
    killed = reader.killed
    assert len(killed) == MAX_KILLED_LISTED
    assert killed[0].startswith("sleep 000000 x x")
    assert killed[0].endswith("…")
    assert len(killed[0]) == MAX_KILLED + 1
    # Past MAX_TRACKED running at once, more work is not followed: the count says what was.
    assert killed[-1] == f"and {MAX_TRACKED - MAX_KILLED_LISTED + 1} more"


def gemini_deltas(count: int, size: int) -> Iterator[str]:
    yield line(type="init", session_id="s1", model="auto")
    for index in range(count):
        yield line(type="message", role="assistant", content=f"{index % 10}" * size, delta=True)


def test_200k_gemini_deltas_of_10_characters_keep_the_reader_bounded() -> None:
    reader = GeminiReader()

    assert most_kept(reader, gemini_deltas(PIECES, 10)) < MESSAGE_BOUND  # 2 million characters sent
    message = reader.final_message
    assert message is not None
    assert message.endswith(f"… (cut: {PIECES * 10 - MAX_MESSAGE}{NOTE}")
    assert message.startswith("0" * 10 + "1" * 10)


def test_a_million_one_character_gemini_deltas_are_joined_as_they_come() -> None:
    reader = GeminiReader()

    assert most_kept(reader, gemini_deltas(MAX_MESSAGE + 7, 1)) < MESSAGE_BOUND
    digits = "0123456789" * (MAX_MESSAGE // 10 + 1)
    assert reader.final_message == digits[:MAX_MESSAGE] + f"… (cut: 7{NOTE}"


def opencode_parts(count: int) -> Iterator[str]:
    for index in range(count):
        part = {"id": f"prt_{index}", "type": "text", "text": f"{index:06d}" + "t" * 5_000}
        yield line(type="text", sessionID="ses_1", part=part)
        tokens = {"input": 1, "output": 1, "cache": {"read": 1}}
        finish = {"reason": "tool-calls", "tokens": tokens, "cost": 0.001}
        yield line(type="step_finish", sessionID="ses_1", part=finish)


def test_100k_opencode_text_parts_and_steps_keep_the_reader_bounded() -> None:
    reader = OpencodeReader()

    assert most_kept(reader, opencode_parts(100_000)) < 10_000  # 500 million characters sent
    assert reader.final_message == "099999" + "t" * 5_000
    assert reader.summary == (
        "100000 steps, 200000 input tokens (100000 cached), 100000 output tokens, $100.00"
    )
