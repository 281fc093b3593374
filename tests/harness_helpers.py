"""Shared by the Harness tests: the transcript fixtures, what each one ends with, event builders.

The expected values were read off the transcripts by hand (see ``tests/transcripts/*``), not
taken from the readers' output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thirdshift.harness import ClaudeReader, CodexReader, StreamReader

TRANSCRIPTS = Path(__file__).parent / "transcripts"
WORKTREE = Path("/home/dev/work/cc")  # the cwd the transcripts were captured in


@dataclass(frozen=True)
class Expected:
    """What a transcript's stream ends with, and the progress lines it gives."""

    harness: str
    session_id: str | None
    final_message: str | None
    killed: tuple[str, ...]
    failed: bool
    summary: str | None
    progress: tuple[str, ...]
    error: str | None = None


_BG_FINAL = (
    'MOCK-FINAL: tool finished; result was "Command running in background with ID: bnknc0obr. '
    "Output is being written to: /tmp/claude-0/-home-dev-work-cc/"
    "1260b204-2d0d-4329-a0ab-79b173470dd3/tasks/bnknc0obr.output. You will be notified when it "
    'completes. To check interim output, use Read on that file path."'
)
_DENIED = (
    "This Bash command contains multiple operations. The following parts require approval: "
    "touch mock-created-file, rm -f mock-created-file"
)
_CODEX_401 = (
    "unexpected status 401 Unauthorized: mock: Incorrect API key provided, "
    "url: http://127.0.0.1:8080/v1/responses"
)

EXPECTED: dict[str, Expected] = {
    "claude-api-401": Expected(
        harness="claude",
        session_id="6411821f-0a79-42cf-8b5b-6da9ce19965d",
        final_message="Invalid API key · Fix external API key",
        killed=(),
        failed=True,  # subtype "success", but is_error: true
        summary="1 turns, $0.00",
        progress=("session started",),
        error="Invalid API key · Fix external API key",
    ),
    "claude-bg-resume": Expected(
        harness="claude",
        session_id="1260b204-2d0d-4329-a0ab-79b173470dd3",
        final_message=(
            "MOCK: continuing the resumed session. (the prompt also carried a <task-notification>)"
        ),
        killed=(),  # the replayed "No completion record" notices come before the results
        failed=False,
        summary="1 turns, $0.00",  # the last result: 1 turn, $0.000235
        progress=("session started",),  # the second init emits nothing
    ),
    "claude-bg-skipperms": Expected(
        harness="claude",
        session_id="1260b204-2d0d-4329-a0ab-79b173470dd3",
        final_message=_BG_FINAL,
        killed=("Sleep for five minutes in the background",),
        failed=False,
        summary="2 turns, $0.00",
        progress=("session started", "$ sleep 300"),
    ),
    "claude-fg-tool": Expected(
        harness="claude",
        session_id="78d46fac-506f-4c00-9928-85a9ed698a91",
        final_message='MOCK-FINAL: tool finished; result was "hi-from-tool"',
        killed=(),
        failed=False,
        summary="2 turns, $0.00",
        progress=("session started", "$ echo hi-from-tool"),
    ),
    "claude-write-defaultperm-denied": Expected(
        harness="claude",
        session_id="7906e725-e7b1-40e3-95c6-6e68d3ee3531",
        final_message=f'MOCK-FINAL: tool finished; result was "{_DENIED}"',
        killed=(),
        failed=False,  # a denied tool is the model's business, not a failed turn
        summary="2 turns, $0.00",
        progress=("session started", "$ touch mock-created-file && rm -f mock-created-file"),
    ),
    "codex-api-401": Expected(
        harness="codex",
        session_id="01a22ac8-9670-73a1-8bea-222a56e63d60",
        final_message=None,
        killed=(),
        failed=True,
        summary=None,  # the turn failed: no turn.completed, no usage
        progress=("session started",),
        error=_CODEX_401,
    ),
    "codex-fg-tool": Expected(
        harness="codex",
        session_id="01a22ac8-0e0b-7192-ad82-cef610a8efbe",
        final_message=(
            'MOCK-FINAL: tool finished; output was "Chunk ID: 122e93\\nWall time: 0.0000 seconds'
            "\\nProcess exited with code 0\\nOriginal token count: 4\\nOutput:\\nhi-from-tool\\n"
            '"'
        ),
        killed=(),
        failed=False,
        summary="40 input tokens (0 cached), 16 output tokens",
        progress=("session started", "$ echo hi-from-tool"),
    ),
    "codex-uexec-bg": Expected(
        harness="codex",
        session_id="01a22ac8-2f15-7e40-9412-9d1a398a7bf5",
        final_message=(
            'MOCK-FINAL: tool finished; output was "Chunk ID: 1a9bc5\\nWall time: 1.0020 seconds'
            '\\nProcess running with session ID 86929\\nOriginal token count: 0\\nOutput:\\n"'
        ),
        killed=("sleep 300",),  # started, never completed before turn.completed
        failed=False,
        summary="40 input tokens (0 cached), 16 output tokens",
        progress=("session started", "$ sleep 300"),
    ),
    "codex-uexec-resume": Expected(
        harness="codex",
        session_id="01a22ac8-2f15-7e40-9412-9d1a398a7bf5",
        final_message="MOCK: continuing the resumed session.",
        killed=(),
        failed=False,
        summary="60 input tokens (0 cached), 24 output tokens",
        progress=("session started",),
    ),
}


def transcript_names() -> list[str]:
    return sorted(path.name for path in TRANSCRIPTS.iterdir() if path.is_dir())


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


def jsonl(**event: Any) -> str:
    """One stream line holding ``event``."""
    return json.dumps(event) + "\n"
