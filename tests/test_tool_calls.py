"""Readers tell of each tool call their stream shows (for the telemetry's execute_tool spans),
read from the real captures; only when told whom to tell, and the rest is as it was."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from thirdshift.harness import StreamReader, ToolState, harness_named

TRANSCRIPTS = Path(__file__).parent / "transcripts"


@dataclass
class Heard:
    """A :class:`~thirdshift.harness.ToolCalls` that keeps what it hears."""

    said: list[tuple[str, str, ToolState]] = field(default_factory=list)

    def saw(self, call_id: str, name: str, state: ToolState) -> None:
        self.said.append((call_id, name, state))


def read(harness: str, capture: str, heard: Heard | None) -> StreamReader:
    reader = harness_named(harness).reader(Path("."))
    if heard is not None:
        reader.report_tool_calls(heard)
    for line in (TRANSCRIPTS / capture / "stdout.jsonl").read_text().splitlines():
        reader.feed(line)
    return reader


@pytest.mark.parametrize(
    ("harness", "capture", "said"),
    [
        (
            "claude",
            "claude-fg-tool",
            [
                ("toolu_mock_5a5dce1235a44eba", "Bash", "started"),
                ("toolu_mock_5a5dce1235a44eba", "", "ended"),
            ],
        ),
        (
            "claude",  # a sub-agent's calls (its Bash inside the Agent call) are calls too
            "claude-subagent",
            [
                ("toolu_fake_000001", "Agent", "started"),
                ("toolu_fake_000006", "Bash", "started"),
                ("toolu_fake_000006", "", "ended"),
                ("toolu_fake_000001", "", "ended"),
            ],
        ),
        (
            "codex",
            "codex-fg-tool",
            [("item_0", "command_execution", "started"), ("item_0", "command_execution", "ended")],
        ),
    ],
    ids=["claude", "claude-subagent", "codex"],
)
def test_a_reader_tells_of_each_tool_call_as_its_stream_shows_it(
    harness: str, capture: str, said: list[tuple[str, str, ToolState]]
) -> None:
    heard = Heard()
    read(harness, capture, heard)
    assert heard.said == said


@pytest.mark.parametrize(
    ("harness", "capture"),
    [
        ("gemini", "gemini-fg"),
        ("qwen", "qwen-fg"),
        ("claude", "claude-bg-skipperms"),
        ("claude", "claude-five-turns"),
    ],
)
def test_every_call_said_to_start_is_said_to_end(harness: str, capture: str) -> None:
    heard = Heard()
    read(harness, capture, heard)
    started = [call for call, name, state in heard.said if state == "started" and name]
    ended = [call for call, _, state in heard.said if state != "started"]
    assert started
    assert sorted(started) == sorted(ended)


@pytest.mark.parametrize(
    "capture", ["claude-fg-tool", "claude-subagent", "codex-fg-tool", "qwen-fg", "gemini-fg"]
)
def test_told_of_no_one_a_reader_ends_as_it_did(capture: str) -> None:
    harness = capture.split("-", maxsplit=1)[0]
    told, untold = read(harness, capture, Heard()), read(harness, capture, None)
    assert told.ended() == untold.ended()
    assert (told.summary, told.failed, told.error) == (untold.summary, untold.failed, untold.error)


def test_a_failed_tool_call_is_said_to_fail() -> None:
    heard = Heard()
    reader = harness_named("claude").reader(Path("."))
    reader.report_tool_calls(heard)
    reader.feed(
        '{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t1",'
        '"name":"Read","input":{}}],"usage":{}}}'
    )
    reader.feed(
        '{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1",'
        '"type":"tool_result","content":"no such file","is_error":true}]}}'
    )
    codex = harness_named("codex").reader(Path("."))
    codex.report_tool_calls(heard)
    codex.feed(
        '{"type":"item.completed","item":{"id":"item_3","type":"mcp_tool_call","server":"gh",'
        '"tool":"create_pr","status":"failed"}}'
    )
    assert heard.said == [
        ("t1", "Read", "started"),
        ("t1", "", "failed"),
        ("item_3", "gh.create_pr", "failed"),
    ]
