"""``thirdshift inspect`` on every capture of every CLI: detected as its Harness, and read as its
reader reads it (the text and the JSON), with nothing but the stream to go on."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from capture_helpers import INTERRUPTED, Expected, captures, expected_of, with_a_stream
from harness_helpers import CAPTURED_AT, inspect, stdout_of

from thirdshift import SessionFailed

EMPTY = [name for name in captures() if name not in with_a_stream()]


@pytest.fixture
def local_time_is_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's local time zone is UTC, so that local reset times read the same anywhere."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def captured_copy(name: str, folder: Path) -> Path:
    """The capture's stdout, last written when it was captured (a reset time counts from it)."""
    log = folder / f"{name}.jsonl"
    shutil.copyfile(stdout_of(name), log)
    os.utime(log, (CAPTURED_AT.timestamp(), CAPTURED_AT.timestamp()))
    return log


def inspected(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, *args: str
) -> tuple[Expected, str]:
    """What inspect prints of the capture (with no warning), and what the capture ends with."""
    code, out, err = inspect(capsys, captured_copy(name, tmp_path), *args)
    assert (code, err) == (0, "")
    return expected_of(name), out


def error_seen(name: str) -> str | None:
    """The error inspect shows: the log has no exit code to tell why Gemini's turn ended."""
    return None if name == INTERRUPTED else expected_of(name).error


def failure_seen(expected: Expected) -> type[SessionFailed] | None:
    """The class inspect shows: the stream's (no stderr there), else a plain failure."""
    if not expected.failed:
        return None
    return (expected.failure if expected.stream_tells else None) or SessionFailed


def failure_report(name: str) -> dict[str, Any] | None:
    expected = expected_of(name)
    kind = failure_seen(expected)
    if kind is None:
        return None
    error = error_seen(name)
    return {
        "type": kind.__name__,
        "message": "the turn failed" if error is None else error,
        "retry_at": expected.retry_at.isoformat() if expected.retry_at else None,
        "exit_code": None,  # the stream does not hold the exit status: the record does
        "signal": None,
        "session_id": expected.session_id,
    }


def usage_report(expected: Expected) -> dict[str, Any] | None:
    usage = expected.usage
    return None if usage is None else {**dataclasses.asdict(usage), "models": list(usage.models)}


def test_the_captures_split_into_streams_and_empty_stdouts() -> None:
    assert EMPTY == [
        "codex-resume-missing",
        "gemini-resume-unknown",
        "opencode-resume-unknown",
        "qwen-resume-unknown",
    ]


@pytest.mark.usefixtures("local_time_is_utc")
@pytest.mark.parametrize("name", with_a_stream())
def test_inspect_prints_a_capture_as_text(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    expected, out = inspected(capsys, tmp_path, name)
    lines = out.splitlines()
    assert lines[: len(expected.progress) + 1] == [*expected.progress, ""]
    assert f"harness: {expected.harness}" in lines
    assert f"session id: {expected.session_id or 'none'}" in lines
    assert f"summary: {expected.summary or 'none'}" in lines
    assert f"failed: {'yes' if expected.failed else 'no'}" in lines
    if expected.killed:
        at = lines.index("killed background work:")
        assert lines[at + 1 : at + 1 + len(expected.killed)] == [f"  {k}" for k in expected.killed]
    else:
        assert "killed background work: none" in lines
    if error_seen(name) is not None:
        assert f"error: {error_seen(name)}" in lines
    failure = [line for line in lines if line.startswith("failure: ")]
    kind = failure_seen(expected)
    if kind in (None, SessionFailed):
        assert failure == []  # "failed: yes" and the error say it all
    else:
        assert kind is not None
        when = f", retry at {expected.retry_at.isoformat()}" if expected.retry_at else ""
        assert failure == [f"failure: {kind.__name__}{when}"]


@pytest.mark.usefixtures("local_time_is_utc")
@pytest.mark.parametrize("name", with_a_stream())
def test_inspect_prints_a_capture_as_json_detecting_its_harness(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    expected, out = inspected(capsys, tmp_path, name, "--json")
    assert out.count("\n") == 1  # one JSON object, on one line
    assert json.loads(out) == {
        "harness": expected.harness,
        "progress": list(expected.progress),
        "progress_not_kept": 0,
        "session_id": expected.session_id,
        "summary": expected.summary,
        "final_message": expected.final_message,
        "killed": list(expected.killed),
        "failed": expected.failed,
        "error": error_seen(name),
        "failure": failure_report(name),
        "usage": usage_report(expected),
        "stderr": None,  # a capture's stderr is beside it as stderr.txt, not as a sidecar
        "record": None,
        "record_file": None,
    }


@pytest.mark.parametrize("name", with_a_stream())
def test_naming_the_right_harness_reads_the_same_without_a_warning(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    detected = inspect(capsys, stdout_of(name), "--json")
    assert inspect(capsys, stdout_of(name), "--json", "--harness", expected_of(name).harness) == (
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
        ("claude-bg-skipperms", "codex", "claude"),
        ("codex-fg-tool", "claude", "codex"),
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


@pytest.mark.usefixtures("local_time_is_utc")
def test_a_reset_time_counts_from_when_the_log_was_last_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = captured_copy("codex-usagelimit", tmp_path)
    later = CAPTURED_AT.timestamp() + 3600  # 05:15: that day's 5:12 AM had passed
    os.utime(log, (later, later))
    _, out, _ = inspect(capsys, log, "--json")
    assert json.loads(out)["failure"]["retry_at"] == "2026-12-02T05:12:00+00:00"
