"""Shared by the Harness tests: the transcript fixtures, what each one ends with, event builders.

The expected values were read off the transcripts by hand (see ``tests/transcripts/*``), not
taken from the readers' output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from thirdshift import (
    AuthFailed,
    Overloaded,
    RateLimited,
    ResumeTargetMissing,
    SessionFailed,
    TurnLimitReached,
    Usage,
    UsageLimitReached,
)
from thirdshift.harness import ClaudeReader, CodexReader, StreamReader

TRANSCRIPTS = Path(__file__).parent / "transcripts"
WORKTREE = Path("/home/dev/work/cc")  # the cwd the transcripts were captured in
# When the failure transcripts were captured (the Claude ones' timestamps say 04:15 UTC): a
# reset time without a date is resolved after this.
CAPTURED_AT = datetime(2026, 12, 1, 4, 15, tzinfo=UTC)
# Transcripts whose CLI wrote nothing on stdout: their story is on stderr alone.
STDERR_ONLY = ("codex-resume-missing",)


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
    usage: Usage | None = None
    failure: type[SessionFailed] | None = None
    """What the reader tells the failure apart as (None: not failed, or a plain failure)."""
    retry_at: datetime | None = None
    """When the failure may be retried, for a session read at ``CAPTURED_AT``."""


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
_OPUS = ("claude-opus-4-8[1m]",)
_ZERO = Usage(
    turns=1, input_tokens=0, output_tokens=0, cached_input_tokens=0, cost_usd=0.0, models=_OPUS
)
_TWO_TURNS = Usage(
    turns=2,
    input_tokens=24,
    output_tokens=14,
    cached_input_tokens=0,
    cost_usd=0.00047,
    models=_OPUS,
)
_CLAUDE_429 = (
    "API Error: Request rejected (429) · mock: This request would exceed the rate limit for your "
    "organization of 50 requests per minute."
)
_SERVER_SIDE = (
    "This is a server-side issue, usually temporary — try again in a moment. If it persists, "
    "check your inference gateway (127.0.0.1:8080)."
)
_CLAUDE_500 = f"API Error: 500 mock: Internal server error. {_SERVER_SIDE}"
_CLAUDE_529 = f"API Error: 529 Overloaded. {_SERVER_SIDE}"
_CLAUDE_LIMIT = "You've hit your session limit · resets 5:12am (UTC)"
_CLAUDE_LOGIN_429 = (
    "API Error: Server is temporarily limiting requests (not your usage limit) · Number of "
    "requests has exceeded your rate limit"
)
_CODEX_429 = (
    "exceeded retry limit, last status: 429 Too Many Requests, request id: req_mock_a82b636f473a"
)
_CODEX_500 = "We\u2019re currently experiencing high demand, which may cause temporary errors."
_CODEX_503 = "Selected model is at capacity. Please try a different model."
_CODEX_LIMIT = (
    "You\u2019ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
    "https://chatgpt.com/settings/usage to purchase more credits or try again at 5:12 AM."
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
        summary="1 turn, $0.00",
        progress=("session started",),
        error="Invalid API key · Fix external API key",
        usage=_ZERO,
        failure=AuthFailed,  # api_error_status 401, error "authentication_failed"
    ),
    "claude-bg-resume": Expected(
        harness="claude",
        session_id="1260b204-2d0d-4329-a0ab-79b173470dd3",
        final_message=(
            "MOCK: continuing the resumed session. (the prompt also carried a <task-notification>)"
        ),
        killed=(),  # the replayed "No completion record" notices come before the results
        failed=False,
        summary="1 turn, $0.00024",  # the last result: 1 turn, $0.000235
        progress=("session started",),  # the second init emits nothing
        usage=Usage(
            turns=1,
            input_tokens=12,
            output_tokens=7,
            cached_input_tokens=0,
            cost_usd=0.000235,
            models=("claude-opus-4-8",),
        ),
    ),
    "claude-bg-stopped-then-notified": Expected(
        harness="claude",
        session_id="f9e0a368-843a-4d4f-bf39-f862d17ff2fb",
        final_message="Started the tests.",
        killed=("sleep 300",),  # the turn taken to read the notification keeps the kill
        failed=False,
        summary="1 turn, $0.00053",  # the last result: 1 turn, $0.000525
        progress=("session started", "$ sleep 300"),
        usage=Usage(
            turns=1,
            input_tokens=10,
            output_tokens=5,
            cached_input_tokens=0,
            cost_usd=0.000525,
            models=("claude-opus-4-8[1m]",),
        ),
    ),
    "claude-bg-skipperms": Expected(
        harness="claude",
        session_id="1260b204-2d0d-4329-a0ab-79b173470dd3",
        final_message=_BG_FINAL,
        killed=("Sleep for five minutes in the background",),
        failed=False,
        summary="2 turns, $0.00047",
        usage=_TWO_TURNS,
        progress=("session started", "$ sleep 300"),
    ),
    "claude-fg-tool": Expected(
        harness="claude",
        session_id="78d46fac-506f-4c00-9928-85a9ed698a91",
        final_message='MOCK-FINAL: tool finished; result was "hi-from-tool"',
        killed=(),
        failed=False,
        summary="2 turns, $0.00047",
        usage=_TWO_TURNS,
        progress=("session started", "$ echo hi-from-tool"),
    ),
    "claude-write-defaultperm-denied": Expected(
        harness="claude",
        session_id="7906e725-e7b1-40e3-95c6-6e68d3ee3531",
        final_message=f'MOCK-FINAL: tool finished; result was "{_DENIED}"',
        killed=(),
        failed=False,  # a denied tool is the model's business, not a failed turn
        summary="2 turns, $0.00047",
        usage=_TWO_TURNS,
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
        failure=AuthFailed,  # "unexpected status 401 Unauthorized"
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
        usage=Usage(turns=1, input_tokens=40, output_tokens=16, cached_input_tokens=0),
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
        usage=Usage(turns=1, input_tokens=40, output_tokens=16, cached_input_tokens=0),
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
        usage=Usage(turns=1, input_tokens=60, output_tokens=24, cached_input_tokens=0),
    ),
    # The failures: each CLI's own retries were cut to one or two (CLAUDE_CODE_MAX_RETRIES,
    # request_max_retries) so that the captures end in seconds, not minutes.
    "claude-429-retries2": Expected(
        harness="claude",
        session_id="d04d2dbf-68e5-4664-b5d4-db5df8a24057",
        final_message=_CLAUDE_429,
        killed=(),
        failed=True,
        summary="1 turn, $0.00",
        progress=("session started",),
        error=_CLAUDE_429,
        usage=_ZERO,
        failure=RateLimited,  # api_error_status 429; it says nothing of when to retry
    ),
    "claude-500-retries1": Expected(
        harness="claude",
        session_id="f55490e1-ff6e-44f8-a14c-6aef622a9bc3",
        final_message=_CLAUDE_500,
        killed=(),
        failed=True,
        summary="1 turn, $0.00",
        progress=("session started",),
        error=_CLAUDE_500,
        usage=_ZERO,
        failure=Overloaded,  # api_error_status 500
    ),
    "claude-529-retries1": Expected(
        harness="claude",
        session_id="2363c4de-380b-4219-8b55-531ccf75ba77",
        final_message=_CLAUDE_529,
        killed=(),
        failed=True,
        summary="1 turn, $0.00",
        progress=("session started",),
        error=_CLAUDE_529,
        usage=_ZERO,
        failure=Overloaded,  # api_error_status 529
    ),
    "claude-maxturns1": Expected(
        harness="claude",
        session_id="a19d1d70-0418-4cb4-9e93-46ac8d0d7186",
        final_message=None,  # its result has no `result` text
        killed=(),
        failed=True,
        summary="2 turns, $0.00024",  # $0.000235
        progress=("session started", "$ echo hi-from-tool"),
        error="Reached maximum number of turns (1)",
        usage=Usage(
            turns=2,
            input_tokens=12,
            output_tokens=7,
            cached_input_tokens=0,
            cost_usd=0.000235,
            models=_OPUS,
        ),
        failure=TurnLimitReached,  # subtype "error_max_turns"
    ),
    "claude-resume-missing": Expected(
        harness="claude",
        session_id=None,  # no init: the result alone
        final_message=None,
        killed=(),
        failed=True,
        summary="0 turns, $0.00",
        progress=(),
        error="No conversation found with session ID: 3f1c2b7a-9d4e-4c1a-8b2f-6e5d4c3b2a19",
        usage=Usage(turns=0, input_tokens=0, output_tokens=0, cached_input_tokens=0, cost_usd=0.0),
        failure=ResumeTargetMissing,
    ),
    # A 429 that is no usage limit, on a login: the same rejected rate_limit_event, but without
    # resetsAt, and a text that says it is not the usage limit (see its HOW.md).
    "claude-ratelimit-oauth": Expected(
        harness="claude",
        session_id="3331ca5b-2156-4610-9aea-4b99aff6b446",
        final_message=_CLAUDE_LOGIN_429,
        killed=(),
        failed=True,
        summary="1 turn, $0.00 at API prices",
        progress=("session started",),
        error=_CLAUDE_LOGIN_429,
        usage=Usage(
            turns=1,
            input_tokens=0,
            output_tokens=0,
            cached_input_tokens=0,
            cost_usd=0.0,
            models=("claude-sonnet-5",),
        ),
        failure=RateLimited,  # api_error_status 429, "not your usage limit", no resetsAt
    ),
    "claude-usagelimit-oauth": Expected(
        harness="claude",
        session_id="7f4eb002-09ec-48e4-8d44-165907705006",
        final_message=_CLAUDE_LIMIT,
        killed=(),
        failed=True,
        summary="1 turn, $0.00 at API prices",
        progress=("session started",),
        error=_CLAUDE_LIMIT,
        usage=Usage(
            turns=1,
            input_tokens=0,
            output_tokens=0,
            cached_input_tokens=0,
            cost_usd=0.0,
            models=("claude-sonnet-5",),
        ),
        failure=UsageLimitReached,  # rate_limit_event status "rejected", resetsAt 1796101925
        retry_at=datetime(2026, 12, 1, 5, 12, 5, tzinfo=UTC),
    ),
    "claude-usagewarn-oauth": Expected(
        harness="claude",
        session_id="63698a54-4b7b-435a-92a0-6a9a30c8a4f2",
        final_message="Hello from the mock model.",
        killed=(),
        failed=False,  # a warning, and the session goes on
        summary="1 turn, $0.00014 at API prices",
        # utilization 0.92, rateLimitType "five_hour", resetsAt 1796101930 (05:12:10 UTC)
        progress=(
            "session started",
            "usage warning: 92% of the five-hour limit used, resets at 05:12 UTC",
        ),
        usage=Usage(
            turns=1,
            input_tokens=12,
            output_tokens=7,
            cached_input_tokens=0,
            cost_usd=0.000141,
            models=("claude-sonnet-5",),
        ),
    ),
    "codex-429-retries1": Expected(
        harness="codex",
        session_id="01a22fcb-e3ca-7142-9d71-ce70f35257f1",
        final_message=None,
        killed=(),
        failed=True,
        summary=None,
        progress=("session started",),
        error=_CODEX_429,
        failure=RateLimited,
    ),
    "codex-500-retries1": Expected(
        harness="codex",
        session_id="01a22fcd-46e6-78c2-9a1d-39787701ee3f",
        final_message=None,
        killed=(),
        failed=True,
        summary=None,
        progress=("session started",),
        error=_CODEX_500,
        failure=Overloaded,  # Codex's words for a 500
    ),
    "codex-503-overloaded": Expected(
        harness="codex",
        session_id="01a22fcc-bb72-7611-bafc-16834a72f854",
        final_message=None,
        killed=(),
        failed=True,
        summary=None,
        progress=("session started",),
        error=_CODEX_503,
        failure=Overloaded,  # a 503 server_is_overloaded, not retried by Codex
    ),
    "codex-usagelimit": Expected(
        harness="codex",
        session_id="01a22fcd-9ddd-7640-aedb-bce16b661a0f",
        final_message=None,
        killed=(),
        failed=True,
        summary=None,
        progress=("session started",),
        error=_CODEX_LIMIT,
        failure=UsageLimitReached,
        retry_at=datetime(2026, 12, 1, 5, 12, tzinfo=UTC),  # the next 5:12 AM after 04:15
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
