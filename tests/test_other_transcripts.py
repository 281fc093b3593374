"""Every opencode, Gemini CLI and Qwen Code capture, read end to end by its Harness's reader."""

from __future__ import annotations

import pytest
from capture_helpers import CAPTURES, READERS, WORKTREE, capture_names, exit_code_of
from harness_helpers import TRANSCRIPTS, read_all, transcript_lines

from thirdshift import Ended, SessionFailed
from thirdshift.harness import harness_named
from thirdshift.harness.failures import from_stderr
from thirdshift.harness.finish import finish_reading
from thirdshift.logs import last_line


def test_every_capture_has_its_expectations() -> None:
    assert capture_names() == sorted(CAPTURES)
    assert len(CAPTURES) == 21  # seven captures of each CLI


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_a_capture_read_end_to_end_and_finished_with_its_exit(name: str) -> None:
    expected = CAPTURES[name]
    assert exit_code_of(name) == expected.exit_code
    reader = READERS[expected.harness](WORKTREE)

    progress = read_all(reader, transcript_lines(name))
    finish_reading(reader, expected.exit_code)

    assert tuple(progress) == expected.progress
    assert reader.session_id == expected.session_id
    assert reader.final_message == expected.final_message
    assert reader.killed == expected.killed == ()
    assert reader.failed is expected.failed
    assert reader.summary == expected.summary
    assert reader.error == expected.error
    assert reader.usage == expected.usage
    assert reader.ended() == Ended(
        session_id=expected.session_id,
        killed=(),
        final_message=expected.final_message,
        usage=expected.usage,
    )


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_a_capture_failed_exactly_when_its_cli_did_not_exit_0(name: str) -> None:
    """Gemini's SIGTERM capture exits 0, yet failed: it has no result (an interruption)."""
    expected = CAPTURES[name]
    interrupted_with_exit_0 = name == "gemini-sigTERM-group"
    assert expected.failed is (expected.exit_code != 0 or interrupted_with_exit_0)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_the_stream_alone_decides_as_much_as_the_exit_code_does(name: str) -> None:
    """Without ``finish`` (``thirdshift inspect`` has no exit code) only Gemini's reason for
    an interrupted turn is missing: failed, ended and the rest are the same."""
    expected = CAPTURES[name]
    reader = READERS[expected.harness](WORKTREE)
    read_all(reader, transcript_lines(name))

    assert reader.failed is expected.failed
    assert reader.ended() == Ended(
        session_id=expected.session_id,
        killed=(),
        final_message=expected.final_message,
        usage=expected.usage,
    )
    interrupted = name == "gemini-sigTERM-group"
    assert reader.error == (None if interrupted else expected.error)


# What a failed session's error would say, as the adapter puts it together: the reader's error,
# else the last line of stderr that is not the Harness's noise.
DIAGNOSTICS = {
    "opencode-api-401": "APIError 401: mock: Incorrect API key provided",
    "opencode-resume-unknown": "\x1b[91m\x1b[1mError: \x1b[0mSession not found",
    "opencode-sigINT-group": None,  # nothing printed: "opencode exited by signal SIGINT"
    "gemini-api-401": CAPTURES["gemini-api-401"].error,
    "gemini-resume-unknown": (
        'Error resuming session: Invalid session identifier "00000000-1111-2222-3333-444444444444".'
    ),
    "gemini-sigTERM-group": "gemini exited 0 without a result: its turn was interrupted",
    "qwen-api-401": "[API Error: 401 mock: Incorrect API key provided]",
    "qwen-resume-unknown": (
        'No saved session found with title "00000000-1111-2222-3333-444444444444".'
    ),
    "qwen-sigINT-group": "Operation cancelled.",
}


def test_every_failed_capture_has_its_diagnostic() -> None:
    assert sorted(DIAGNOSTICS) == sorted(name for name in CAPTURES if CAPTURES[name].failed)


@pytest.mark.parametrize("name", sorted(DIAGNOSTICS))
def test_a_failed_capture_has_a_diagnostic_and_a_failure_class_as_the_adapter_sees_them(
    name: str,
) -> None:
    """The diagnostic is never the CLI's chatter; the class comes from the stream, else stderr."""
    expected = CAPTURES[name]
    harness = harness_named(expected.harness)
    reader = harness.reader(WORKTREE)
    read_all(reader, transcript_lines(name))
    finish_reading(reader, expected.exit_code)
    noise = harness.stderr_noise
    stderr_line = last_line(TRANSCRIPTS / name / "stderr.txt", noise)

    diagnostic = reader.error or stderr_line
    info = reader.failure or from_stderr(stderr_line)

    assert reader.failed
    assert diagnostic == DIAGNOSTICS[name]
    assert (info.kind if info else SessionFailed) is expected.failure
    assert (reader.failure is not None) is (expected.stream_tells and info is not None)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_a_capture_that_did_not_fail_shows_no_failure(name: str) -> None:
    expected = CAPTURES[name]
    reader = READERS[expected.harness](WORKTREE)
    read_all(reader, transcript_lines(name))
    finish_reading(reader, expected.exit_code)
    assert (expected.failure is None) is (not expected.failed)
    if not expected.failed:
        assert reader.failure is None


@pytest.mark.parametrize("name", [n for n in sorted(CAPTURES) if not CAPTURES[n].failed])
def test_the_stderr_of_a_good_run_is_all_noise_or_the_clis_own_stack_traces(name: str) -> None:
    """Noise is each CLI's chatter of every run, so a good run of Qwen or opencode leaves
    nothing, and Gemini only its router's logged (harmless) complaints."""
    harness = harness_named(CAPTURES[name].harness)
    noise = harness.stderr_noise
    last = last_line(TRANSCRIPTS / name / "stderr.txt", noise)
    if name == "gemini-hello":
        assert last == "}"  # the end of a logged ZodError from the model router
    else:
        assert last is None
