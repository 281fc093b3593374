"""``thirdshift inspect`` on logs that are odd or huge: bytes that are not UTF-8, surrogates,
long lines, more progress than is kept, and a child's peak memory whatever a line holds."""

from __future__ import annotations

import json
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from harness_helpers import inspect, jsonl, stdout_of

from thirdshift import Ended
from thirdshift._cli import log_report
from thirdshift._cli.inspect import MAX_PROGRESS_KEPT
from thirdshift._machine.follow import MAX_PARSED_LINE
from thirdshift.harness import Choice, ClaudeReader, Harness, Invocation, StreamReader

# Lenient decoding


def test_bytes_that_are_not_utf8_are_read_leniently(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(
        b"\xff\xfe binary noise\n"
        + stdout_of("claude-bg-skipperms").read_bytes().replace(b"sleep 300", b"sleep \xff300")
    )
    code, out, _ = inspect(capsys, log, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["progress"] == ["session started", "$ sleep \ufffd300"]
    assert report["killed"] == ["Sleep for five minutes in the background"]


def test_a_lone_surrogate_in_the_stream_is_printed_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"type": "system", "subtype": "init", "session_id": "s"}\n'
        '{"type": "result", "subtype": "success", "result": "bad \\ud800 text"}\n'
    )
    code, out, _ = inspect(capsys, log)
    assert code == 0
    assert "  bad \\ud800 text\n" in out


def test_json_is_printable_ascii_whatever_the_stream_holds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hostile = "\\u001b[2J \\u009b31m \\u007f \\u202e \\u2028 caf\\u00e9 \\ud800"
    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"type": "system", "subtype": "init", "session_id": "s"}\n'
        f'{{"type": "result", "subtype": "success", "result": "{hostile}"}}\n'
    )
    code, out, _ = inspect(capsys, log, "--json")
    assert code == 0
    assert out.endswith("\n")
    assert all(" " <= character <= "~" for character in out[:-1]), out
    assert json.loads(out)["final_message"] == json.loads(f'"{hostile}"')


def test_a_long_line_and_a_missing_final_newline_are_fine(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    command = "x" * (MAX_PARSED_LINE - 1000)
    log.write_text(
        jsonl(type="thread.started", thread_id="t")
        + jsonl(
            type="item.started", item={"id": "i", "type": "command_execution", "command": command}
        )
        + '{"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 2}}'
    )
    code, out, _ = inspect(capsys, log, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["progress"] == ["session started", "$ " + "x" * 100 + "…"]
    assert report["summary"] == "1 input tokens (0 cached), 2 output tokens"


def test_a_line_over_the_parse_cap_is_left_out_as_the_live_follow_leaves_it_out(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    command = "x" * (MAX_PARSED_LINE + 1)
    log.write_text(
        jsonl(type="thread.started", thread_id="t")
        + jsonl(
            type="item.started", item={"id": "i", "type": "command_execution", "command": command}
        )
        + jsonl(type="turn.completed", usage={"input_tokens": 1, "output_tokens": 2})
    )
    code, out, _ = inspect(capsys, log, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["progress"] == ["session started"]  # the session's reader never saw the rest
    assert report["summary"] == "1 input tokens (0 cached), 2 output tokens"


def test_lines_that_hold_no_json_object_never_reach_the_reader(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fed: list[str] = []
    feed = ClaudeReader.feed

    def recorded(reader: ClaudeReader, line: str) -> list[str]:
        fed.append(line)
        return feed(reader, line)

    monkeypatch.setattr(ClaudeReader, "feed", recorded)
    start = jsonl(type="system", subtype="init", session_id="s")
    end = jsonl(type="result", subtype="success", is_error=False, result="done")
    log = tmp_path / "log.jsonl"
    log.write_text("x\n{\n" * 100_000 + start + "y\n}\n" * 100_000 + end + "z")

    code, out, _ = inspect(capsys, log, "--json")

    assert code == 0
    assert json.loads(out)["final_message"] == "done"
    assert fed == [start.strip(), end.strip()]


@dataclass
class PlainReader(StreamReader):
    """A plugin's reader of a stream of plain text: every line is a progress line."""

    session_id: str | None = None
    killed: tuple[str, ...] = ()
    final_message: str | None = None
    summary: str | None = None
    failed: bool = False
    error: str | None = None

    def feed(self, line: str) -> list[str]:
        self.final_message = line
        return [line]

    def ended(self) -> Ended:
        return Ended(self.session_id, self.killed, self.final_message)


@dataclass(frozen=True)
class PlainHarness(Harness):
    name: str = "plain"
    stop_signals: ClassVar[tuple[signal.Signals, ...]] = ()
    skills_dir: ClassVar[str] = ".plain/skills"

    def invocation(
        self, choice: Choice, resume: str | None, prompt: str, skills: Sequence[str] = ()
    ) -> Invocation:
        return Invocation(argv=("plain",), stdin=prompt)

    def reader(self, worktree: Path) -> PlainReader:
        return PlainReader()


def test_a_named_harness_whose_reader_reads_plain_text_gets_every_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log_report, "harness_named", lambda name: PlainHarness())
    log = tmp_path / "log.jsonl"
    log.write_text("x\n\n{\n" + jsonl(type="result") + "the end")

    code, out, _ = inspect(capsys, log, "--json", "--harness", "plain")

    assert code == 0
    report = json.loads(out)
    assert report["progress"] == ["x", "{", '{"type": "result"}', "the end"]
    assert report["final_message"] == "the end"


def tool_calls(count: int) -> str:
    """A Claude stream of ``count`` Bash tool calls, each its progress line ``$ echo <n>``."""
    return jsonl(type="system", subtype="init", session_id="s") + "".join(
        jsonl(
            type="assistant",
            message={
                "content": [{"type": "tool_use", "name": "Bash", "input": {"command": f"echo {n}"}}]
            },
        )
        for n in range(count)
    )


def test_json_keeps_the_first_progress_lines_and_counts_the_rest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(tool_calls(MAX_PROGRESS_KEPT + 5))

    code, out, _ = inspect(capsys, log, "--json")

    assert code == 0
    report = json.loads(out)
    expected = ["session started", *[f"$ echo {n}" for n in range(MAX_PROGRESS_KEPT - 1)]]
    assert report["progress"] == expected
    assert report["progress_not_kept"] == 6


def test_text_prints_every_progress_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(tool_calls(MAX_PROGRESS_KEPT + 5))

    code, out, _ = inspect(capsys, log)

    assert code == 0
    lines = out.splitlines()
    assert lines[: MAX_PROGRESS_KEPT + 7] == [
        "session started",
        *[f"$ echo {n}" for n in range(MAX_PROGRESS_KEPT + 5)],
        "",
    ]


# Memory: a child's peak RSS, whatever the log holds
