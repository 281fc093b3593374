"""The one loader of the captures' expected values: ``tests/transcripts/<name>/expected.json``.

Each capture folder holds what a real CLI printed (``stdout.jsonl``, ``stderr.txt``), how it was
run (``argv.json``, ``meta.json``) and, in ``expected.json``, what its stream ends with. Those
values were read off the captures by hand (the opencode, Gemini and Qwen ones as
``../shared/OTHER-CLIS.md`` describes them), not taken from the readers' output; its ``notes``
say why where a value is not plain. The loader refuses an unknown key, so a typo fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from harness_helpers import TRANSCRIPTS, meta_of, stdout_of

from thirdshift import SessionFailed, Usage
from thirdshift.harness import (
    ClaudeReader,
    CodexReader,
    GeminiReader,
    OpencodeReader,
    QwenReader,
)

AnyReader = ClaudeReader | CodexReader | OpencodeReader | GeminiReader | QwenReader
READERS: dict[str, Callable[[Path], AnyReader]] = {
    "claude": ClaudeReader,
    "codex": CodexReader,
    "opencode": OpencodeReader,
    "gemini": GeminiReader,
    "qwen": QwenReader,
}
# The one capture whose CLI exited 0 and yet failed: Gemini exits 0 on SIGTERM, printing no
# result, so only the exit code (which ``thirdshift inspect`` has not) tells why it ended.
INTERRUPTED = "gemini-sigTERM-group"
# The one capture whose stream cannot say that it failed: Codex printed nothing on stdout, and
# its reader takes no exit code. The adapter fails the session on its exit 1; stderr says why.
STDERR_ONLY = "codex-resume-missing"


def _kinds(kind: type[SessionFailed]) -> list[type[SessionFailed]]:
    return [kind, *(sub for child in kind.__subclasses__() for sub in _kinds(child))]


# Every class a failure is told apart as, by its name: SessionFailed and everything below it.
FAILURES: dict[str, type[SessionFailed]] = {kind.__name__: kind for kind in _kinds(SessionFailed)}
REQUIRED_KEYS = frozenset(
    {
        "harness",
        "exit_code",
        "session_id",
        "final_message",
        "killed",
        "failed",
        "summary",
        "progress",
        "error",
        "usage",
        "failure",
    }
)
OPTIONAL_KEYS = frozenset({"retry_at", "stream_tells", "diagnostic", "notes"})
USAGE_KEYS = frozenset(
    {
        "turns",
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
        "cost_usd",
        "models",
        "billing",
        "subagents",
    }
)


@dataclass(frozen=True)
class Expected:
    """What a capture's stream ends with, its progress lines and the CLI's exit."""

    harness: str
    exit_code: int | None
    """What the reader's ``finish`` is told: the capture's exit code, None for a signal."""
    session_id: str | None
    final_message: str | None
    killed: tuple[str, ...]
    failed: bool
    summary: str | None
    progress: tuple[str, ...]
    error: str | None
    usage: Usage | None
    failure: type[SessionFailed] | None
    """The class a failed session raises: from the stream, else from the last line of stderr
    (an unknown resume id shows there alone); None where the session did not fail."""
    retry_at: datetime | None
    """When the failure may be retried, for a session read at ``CAPTURED_AT``."""
    stream_tells: bool
    """Whether the reader classifies the failure (False: stderr alone does)."""
    diagnostic: str | None
    """What a failed session's error says as the adapter puts it together: the reader's error,
    else the last line of stderr that is not the Harness's noise."""


def expected_path(name: str) -> Path:
    return TRANSCRIPTS / name / "expected.json"


def raw_expected(name: str) -> dict[str, Any]:
    """The capture's expected.json as written, for the tests of its keys."""
    raw: dict[str, Any] = json.loads(expected_path(name).read_text())
    return raw


def _usage(raw: dict[str, Any] | None) -> Usage | None:
    if raw is None:
        return None
    if unknown := set(raw) - USAGE_KEYS:
        raise ValueError(f"unknown usage keys {sorted(unknown)}")
    return Usage(**{**raw, "models": tuple(raw.get("models", ()))})


def parse_expected(raw: dict[str, Any]) -> Expected:
    """Expected values from an expected.json's object; an unknown or missing key is refused."""
    unknown = set(raw) - REQUIRED_KEYS - OPTIONAL_KEYS
    missing = REQUIRED_KEYS - set(raw)
    if unknown or missing:
        raise ValueError(f"unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")
    retry_at = raw.get("retry_at")
    failure = raw["failure"]
    return Expected(
        harness=raw["harness"],
        exit_code=raw["exit_code"],
        session_id=raw["session_id"],
        final_message=raw["final_message"],
        killed=tuple(raw["killed"]),
        failed=raw["failed"],
        summary=raw["summary"],
        progress=tuple(raw["progress"]),
        error=raw["error"],
        usage=_usage(raw["usage"]),
        failure=None if failure is None else FAILURES[failure],
        retry_at=None if retry_at is None else datetime.fromisoformat(retry_at),
        stream_tells=raw.get("stream_tells", True),
        diagnostic=raw.get("diagnostic"),
    )


@cache
def expected_of(name: str) -> Expected:
    """The capture's expected values, typed."""
    return parse_expected(raw_expected(name))


def capture_folders() -> list[str]:
    """Every capture in tests/transcripts, by its folder name."""
    return sorted(path.name for path in TRANSCRIPTS.iterdir() if path.is_dir())


def captures(*harnesses: str) -> list[str]:
    """The captures that have an expected.json, of the Harnesses named (of all, if none is)."""
    return [
        name
        for name in capture_folders()
        if expected_path(name).is_file()
        and (not harnesses or expected_of(name).harness in harnesses)
    ]


def with_a_stream() -> list[str]:
    """The captures whose CLI printed a stream on stdout."""
    return [name for name in captures() if stdout_of(name).stat().st_size]


def exit_code_of(name: str) -> int | None:
    """The capture's exit code as ``finish`` is told it: None when a signal ended the CLI."""
    rc = meta_of(name)["rc"]
    assert isinstance(rc, int)
    return rc if rc >= 0 else None
