"""Every real capture in tests/transcripts, read end to end by its Harness's reader.

What each one ends with is in its ``expected.json`` (see ``capture_helpers``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from capture_helpers import (
    INTERRUPTED,
    OPTIONAL_KEYS,
    READERS,
    REQUIRED_KEYS,
    STDERR_ONLY,
    capture_folders,
    captures,
    exit_code_of,
    expected_of,
    parse_expected,
    raw_expected,
)
from harness_helpers import TRANSCRIPTS, WORKTREE, read_all, transcript_lines

from thirdshift import Ended, SessionFailed
from thirdshift._logs import last_line
from thirdshift.harness import harness_named
from thirdshift.harness._base import finish_reading

# The captures themselves


def test_every_capture_folder_has_an_expected_json() -> None:
    assert captures() == capture_folders()
    counts = Counter(expected_of(name).harness for name in captures())
    # seven captures of each CLI added after Claude and Codex
    assert counts == {"claude": 19, "codex": 10, "opencode": 7, "gemini": 7, "qwen": 7}


@pytest.mark.parametrize("name", captures())
def test_an_expected_json_has_every_key_it_needs_and_no_other(name: str) -> None:
    keys = set(raw_expected(name))
    assert keys >= REQUIRED_KEYS
    assert keys <= REQUIRED_KEYS | OPTIONAL_KEYS
    notes = raw_expected(name).get("notes", {})
    assert set(notes) <= REQUIRED_KEYS | OPTIONAL_KEYS  # a note is about one of the values


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        ({"sumary": None}, r"unknown keys \['sumary'\], missing keys \[\]"),
        ({"usage": {"turns": 1, "cost": 0.0}}, r"unknown usage keys \['cost'\]"),
        ({"summary": ...}, r"unknown keys \[\], missing keys \['summary'\]"),
    ],
    ids=["a misspelt key", "a misspelt usage key", "a missing key"],
)
def test_the_loader_refuses_an_unknown_or_missing_key(change: dict[str, Any], refusal: str) -> None:
    raw = {**raw_expected("claude-fg-tool"), **change}
    raw = {key: value for key, value in raw.items() if value is not ...}
    with pytest.raises(ValueError, match=refusal):
        parse_expected(raw)


@pytest.mark.parametrize("name", captures())
def test_a_capture_failed_exactly_when_its_cli_did_not_exit_0(name: str) -> None:
    """Gemini's SIGTERM capture exits 0, yet failed: it has no result (an interruption)."""
    expected = expected_of(name)
    assert expected.exit_code == exit_code_of(name)
    if name == STDERR_ONLY:
        assert (expected.exit_code, expected.failed) == (1, False)
    else:
        assert expected.failed is (expected.exit_code != 0 or name == INTERRUPTED)


@pytest.mark.parametrize("name", captures("opencode", "gemini", "qwen"))
def test_none_of_the_clis_added_later_reports_killed_work_in_its_stream(name: str) -> None:
    assert expected_of(name).killed == ()


# Read end to end


@pytest.mark.parametrize("name", captures())
def test_a_capture_read_end_to_end_and_finished_with_its_exit(name: str) -> None:
    expected = expected_of(name)
    reader = READERS[expected.harness](WORKTREE)

    progress = read_all(reader, transcript_lines(name))
    finish_reading(reader, expected.exit_code)

    assert tuple(progress) == expected.progress
    assert reader.session_id == expected.session_id
    assert reader.final_message == expected.final_message
    assert reader.killed == expected.killed
    assert reader.failed is expected.failed
    assert reader.summary == expected.summary
    assert reader.error == expected.error
    assert reader.usage == expected.usage
    assert reader.ended() == Ended(
        session_id=expected.session_id,
        killed=expected.killed,
        final_message=expected.final_message,
        usage=expected.usage,
    )


@pytest.mark.parametrize("name", captures())
def test_the_stream_alone_decides_as_much_as_the_exit_code_does(name: str) -> None:
    """Without ``finish`` (``thirdshift inspect`` has no exit code) only Gemini's reason for
    an interrupted turn is missing: failed, ended and the rest are the same."""
    expected = expected_of(name)
    reader = READERS[expected.harness](WORKTREE)
    read_all(reader, transcript_lines(name))

    assert reader.failed is expected.failed
    assert reader.ended() == Ended(
        session_id=expected.session_id,
        killed=expected.killed,
        final_message=expected.final_message,
        usage=expected.usage,
    )
    assert reader.error == (None if name == INTERRUPTED else expected.error)


# How a failure is seen


@pytest.mark.parametrize("name", captures())
def test_a_failed_capture_and_only_a_failed_one_has_a_diagnostic(name: str) -> None:
    assert ("diagnostic" in raw_expected(name)) is expected_of(name).failed


@pytest.mark.parametrize("name", [name for name in captures() if expected_of(name).failed])
def test_a_failed_capture_has_a_diagnostic_and_a_failure_class_as_the_adapter_sees_them(
    name: str,
) -> None:
    """The diagnostic is never the CLI's chatter; the class comes from the stream, else stderr."""
    expected = expected_of(name)
    harness = harness_named(expected.harness)
    reader = harness.reader(WORKTREE)
    read_all(reader, transcript_lines(name))
    finish_reading(reader, expected.exit_code)
    noise = harness.stderr_noise
    stderr_line = last_line(TRANSCRIPTS / name / "stderr.txt", noise)

    diagnostic = reader.error or stderr_line
    info = reader.failure or harness.stderr_failure(stderr_line)

    assert reader.failed
    assert diagnostic == expected.diagnostic
    assert (info.kind if info else SessionFailed) is expected.failure
    assert (reader.failure is not None) is (expected.stream_tells and info is not None)


@pytest.mark.parametrize("name", captures())
def test_a_capture_that_did_not_fail_shows_no_failure(name: str) -> None:
    expected = expected_of(name)
    reader = READERS[expected.harness](WORKTREE)
    read_all(reader, transcript_lines(name))
    finish_reading(reader, expected.exit_code)
    assert (expected.failure is None) is (not expected.failed)
    if not expected.failed:
        assert reader.failure is None


@pytest.mark.parametrize(
    "name",
    [name for name in captures("opencode", "gemini", "qwen") if not expected_of(name).failed],
)
def test_the_stderr_of_a_good_run_is_all_noise_or_the_clis_own_stack_traces(name: str) -> None:
    """Noise is each CLI's chatter of every run, so a good run of Qwen or opencode leaves
    nothing, and Gemini only its router's logged (harmless) complaints."""
    harness = harness_named(expected_of(name).harness)
    noise = harness.stderr_noise
    last = last_line(TRANSCRIPTS / name / "stderr.txt", noise)
    if name == "gemini-hello":
        assert last == "}"  # the end of a logged ZodError from the model router
    else:
        assert last is None
