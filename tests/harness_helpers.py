"""Shared by the Harness tests: the transcript fixtures' files, readers fed them, event builders.

What each transcript ends with is beside it, in its expected.json (read by ``capture_helpers``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from thirdshift._cli import main
from thirdshift.harness import (
    ClaudeHarness,
    ClaudeReader,
    CodexHarness,
    CodexReader,
    GeminiHarness,
    OpencodeHarness,
    QwenHarness,
    StreamReader,
)

TRANSCRIPTS = Path(__file__).parent / "transcripts"
WORKTREE = Path("/home/dev/work/cc")  # the cwd the transcripts were captured in
# When the failure transcripts were captured (the Claude ones' timestamps say 04:15 UTC): a
# reset time without a date is resolved after this.
CAPTURED_AT = datetime(2026, 12, 1, 4, 15, tzinfo=UTC)


def stdout_of(name: str) -> Path:
    return TRANSCRIPTS / name / "stdout.jsonl"


def transcript_lines(name: str) -> list[str]:
    """The transcript's stdout, a line at a time, newlines kept (as a live stream gives them)."""
    return stdout_of(name).read_bytes().decode("utf-8").splitlines(keepends=True)


def meta_of(name: str) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads((TRANSCRIPTS / name / "meta.json").read_text())
    return meta


def reader_for(harness: str, worktree: Path = WORKTREE) -> ClaudeReader | CodexReader:
    return ClaudeReader(worktree) if harness == "claude" else CodexReader(worktree)


def read_all(reader: StreamReader, lines: list[str]) -> list[str]:
    """Feed every line; return every progress line, in order."""
    progress: list[str] = []
    for line in lines:
        progress += reader.feed(line)
    return progress


def inspect(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """``thirdshift inspect ARGS`` in this process: its exit code, stdout and stderr."""
    code = main(["inspect", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def jsonl(**event: Any) -> str:
    """One stream line holding ``event``."""
    return json.dumps(event) + "\n"


# The Harnesses, for the tests parametrised by CLI
AnyHarness = ClaudeHarness | CodexHarness | OpencodeHarness | GeminiHarness | QwenHarness
HARNESSES: list[AnyHarness] = [
    ClaudeHarness(),
    CodexHarness(),
    OpencodeHarness(),
    GeminiHarness(),
    QwenHarness(),
]
HARNESS_IDS = [harness.name for harness in HARNESSES]
every_harness = pytest.mark.parametrize("harness", HARNESSES, ids=HARNESS_IDS)
PROMPT = "Fix the flaky test in tests/test_io.py, then run the suite."
SESSION = "1260b204-2d0d-4329-a0ab-79b173470dd3"  # a Claude session id, of claude-bg-resume
THREAD = "01a22ac8-2f15-7e40-9412-9d1a398a7bf5"  # a Codex thread id, of codex-uexec-resume
OPENCODE_SESSION = "ses_dd02063a2ffexibETwonf7yD0T"  # of opencode-resume-stdin


def argv_of(capture: str) -> tuple[str, ...]:
    """The argv the capture's CLI was run with."""
    recorded: dict[str, Any] = json.loads((TRANSCRIPTS / capture / "argv.json").read_text())
    return tuple(recorded["argv"])
