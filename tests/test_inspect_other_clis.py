"""``thirdshift inspect`` on opencode, Gemini CLI and Qwen Code logs: detected, and read as the
readers read them (the Claude and Codex cases are in test_inspect.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from capture_helpers import CAPTURES
from harness_helpers import stdout_of

from thirdshift import SessionFailed
from thirdshift.cli import main
from thirdshift.cli.as_json import usage_json

WITH_A_STREAM = [name for name in sorted(CAPTURES) if stdout_of(name).stat().st_size]
EMPTY = [name for name in sorted(CAPTURES) if not stdout_of(name).stat().st_size]


def failure_report(name: str) -> dict[str, Any] | None:
    """What inspect shows as the failure: the stream's class (no stderr, no exit code there)."""
    expected = CAPTURES[name]
    if not expected.failed:
        return None
    interrupted = name == "gemini-sigTERM-group"
    kind = expected.failure if expected.stream_tells else SessionFailed
    message = "the turn failed" if interrupted or expected.error is None else expected.error
    return {
        "type": getattr(kind, "__name__", None),
        "message": message,
        "retry_at": None,
        "exit_code": None,
        "signal": None,
        "session_id": expected.session_id,
    }


def inspect(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main(["inspect", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_captures_split_into_streams_and_empty_stdouts() -> None:
    assert EMPTY == ["gemini-resume-unknown", "opencode-resume-unknown", "qwen-resume-unknown"]


@pytest.mark.parametrize("name", WITH_A_STREAM)
def test_a_log_is_detected_as_its_harness_and_read_as_its_reader_reads_it(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    expected = CAPTURES[name]
    code, out, err = inspect(capsys, stdout_of(name), "--json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    interrupted = name == "gemini-sigTERM-group"  # the log has no exit code to tell why
    assert report == {
        "harness": expected.harness,
        "progress": list(expected.progress),
        "progress_not_kept": 0,
        "session_id": expected.session_id,
        "summary": expected.summary,
        "final_message": expected.final_message,
        "killed": [],
        "failed": expected.failed,
        "error": None if interrupted else expected.error,
        "failure": failure_report(name),
        "usage": None if expected.usage is None else usage_json(expected.usage),
        "stderr": None,  # a capture's stderr is beside it as stderr.txt, not as a sidecar
        "record": None,
        "record_file": None,
    }


@pytest.mark.parametrize("name", WITH_A_STREAM)
def test_naming_the_right_harness_reads_the_same_without_a_warning(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    detected = inspect(capsys, stdout_of(name), "--json")
    assert inspect(capsys, stdout_of(name), "--json", "--harness", CAPTURES[name].harness) == (
        detected
    )


@pytest.mark.parametrize("name", EMPTY)
def test_an_empty_log_holds_no_stream(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, out, err = inspect(capsys, stdout_of(name))
    assert (code, out) == (2, "")
    assert err == (
        f"thirdshift: {stdout_of(name)} holds no line of a Claude Code, Codex, opencode, "
        "Gemini CLI or Qwen Code stream\n"
    )


@pytest.mark.parametrize(
    ("name", "forced", "actual"),
    [
        ("gemini-fg", "claude", "gemini"),
        ("opencode-api-401", "gemini", "opencode"),
        ("qwen-fg", "claude", "qwen"),
        ("claude-fg-tool", "opencode", "claude"),
        ("codex-fg-tool", "qwen", "codex"),
    ],
)
def test_a_harness_that_does_not_match_the_log_is_warned_about(
    capsys: pytest.CaptureFixture[str], name: str, forced: str, actual: str
) -> None:
    log = stdout_of(name)
    code, _out, err = inspect(capsys, log, "--harness", forced)
    assert code == 0
    assert err == (
        f"thirdshift: warning: {log} does not look like a {forced} stream (it reads as "
        f"{actual}'s); try --harness {actual}, or leave --harness out to detect it\n"
    )


def test_a_qwen_log_that_lost_its_init_reads_as_claudes_yet_qwen_is_not_warned_about(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "headless.jsonl"
    log.write_text("".join(stdout_of("qwen-fg").read_text().splitlines(keepends=True)[1:]))

    assert json.loads(inspect(capsys, log, "--json")[1])["harness"] == "claude"
    code, out, err = inspect(capsys, log, "--harness", "qwen", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["progress"] == ["$ echo hi-from-tool"]
