"""Hostile streams and hostile names, end to end: stream data never becomes a flag or a path.

Each case asserts its outcome and exact error text, that the Session log holds every byte the
CLI wrote to stdout, and (with the autouse ``no_process_left`` fixture) that nothing is left.
The readers' own handling of odd lines is property-tested in-process
(tests/test_reader_properties.py); here the same shapes go through real processes.
"""

from __future__ import annotations

import re
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from sessionkit import CHOICES, IDS, assert_logged_exactly, every_pid, log_of, still_running

from pytest_thirdshift import FakeCLIs
from thirdshift import (
    Choice,
    Logs,
    SessionFailed,
    Sessions,
    ThirdshiftError,
    claude,
    codex,
)
from thirdshift.harness._lines import MAX_MESSAGE, cut
from thirdshift.testing import fakecli as fake
from thirdshift.testing import steps
from thirdshift.testing.fakecli import _steps as cli_steps


def within(
    choice: Choice, tmp_path: Path, lines: list[str] | None = None
) -> AbstractContextManager[Sessions]:
    sink = lines if lines is not None else []
    return Sessions.within(Logs(tmp_path / "logs", "repo"), tmp_path, choice, progress=sink.append)


# Session ids from the stream


@pytest.mark.parametrize("choice", CHOICES, ids=IDS)
@pytest.mark.parametrize(
    "hostile", ["--dangerously-skip-permissions", "../../x", "-", "a b", "x\n--help", ""]
)
def test_a_hostile_session_id_is_never_resumed(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, choice: Choice, hostile: str
) -> None:
    cli = fake_cli_on_path.harness(choice.harness.name)
    cli.script(fake.session_id(hostile), steps.background("sleep 300"), steps.say("started"))

    with pytest.raises(ThirdshiftError) as raised, within(choice, tmp_path) as sessions:
        sessions.run("implement", "go")

    assert str(raised.value) == f"refusing to resume session id {hostile!r}: not a plain id"
    (call,) = cli.calls  # no second process
    assert call.session_id == hostile
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)
    assert not log_of(tmp_path / "logs", "implement-resume").exists()
    # The Resume's log was never made, so there is no last log to point at.
    assert sessions.last_log is None
    assert still_running(every_pid(call)) == []


def test_a_session_id_too_long_to_be_one_is_refused(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # Plain letters, but longer than one argument may be (128 KiB on Linux).
    huge = "a" * 200_000
    fake_cli_on_path.codex.script(
        fake.session_id(huge), steps.background("sleep 300"), steps.say("started")
    )

    with pytest.raises(ThirdshiftError) as raised, within(codex(), tmp_path) as sessions:
        sessions.run("implement", "go")

    assert str(raised.value) == f"refusing to resume session id '{'a' * 100}…': not a plain id"
    (call,) = fake_cli_on_path.codex.calls
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)


# Kinds and names, which become log paths


@pytest.mark.parametrize("kind", ["../x", "a/b", "/abs", "..", ".", ".hidden", "", "x\0y", "-rf"])
def test_a_kind_that_is_not_a_plain_name_is_refused_before_anything_runs(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, kind: str
) -> None:
    with (
        pytest.raises(ValueError, match=r"is not a plain name") as raised,
        within(claude(), tmp_path) as sessions,
    ):
        sessions.run(kind, "go")

    assert str(raised.value) == (
        f"session kind {kind!r} is not a plain name: use letters, digits, '.', '_' and '-', "
        "starting with a letter or digit"
    )
    assert fake_cli_on_path.claude.calls == []
    assert not (tmp_path / "logs").exists()
    assert not (tmp_path / "x").exists()
    assert sessions.last_log is None


@pytest.mark.parametrize("name", ["../x", "a/b", "..", ".", ""])
def test_a_log_name_with_a_path_in_it_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match=r"^log name ") as raised:
        Logs(tmp_path, name)

    assert str(raised.value) == f"log name {name!r} must not be empty or hold a path separator"


# Lines no reader should choke on


def deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize("choice", CHOICES, ids=IDS)
def test_very_deep_json_nesting_is_logged_and_skipped(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, choice: Choice
) -> None:
    cli = fake_cli_on_path.harness(choice.harness.name)
    cli.script(
        cli_steps.raw(b'{"type":"result","subtype":"success","is_error":true,"x":' + deep(100_000)),
        cli_steps.raw(b"}\n"),
        cli_steps.raw(deep(1_000_000) + b"\n"),
        cli_steps.raw(b'{"type":"assistant","message":{"content":' + deep(5_000) + b"}}\n"),
        steps.run("true"),
        steps.say("still fine"),
    )
    lines: list[str] = []

    with within(choice, tmp_path, lines) as sessions:
        assert sessions.run_to_final_message("implement", "go") == "still fine"

    (call,) = cli.calls
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)
    assert lines[1:3] == ["implement: session started", "implement: $ true"]


def test_a_result_with_200_000_errors_fails_with_a_bounded_message(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(
        steps.say("trying"),
        cli_steps.raw(b'{"type":"result","subtype":"error_during_execution","is_error":true,'),
        cli_steps.raw(b'"errors":["the first problem",'),
        cli_steps.raw(b'"another problem",', repeat=199_998),  # 3.6 MB: within the parse cap
        cli_steps.raw(b'"the last problem"]}\n'),
        steps.exit(1, abrupt=True),
    )

    with pytest.raises(SessionFailed) as failed, within(claude(), tmp_path) as sessions:
        sessions.run("implement", "go")

    message = str(failed.value)
    diagnostic = failed.value.diagnostic
    assert diagnostic is not None
    # The reader keeps MAX_MESSAGE characters of the errors and says how much the log has.
    assert len(diagnostic) < MAX_MESSAGE + 100
    assert diagnostic.endswith(" more characters in the Session log)")
    # Continuation lines are indented, so that none can pass for a line of thirdshift's own.
    assert message.startswith("claude exited 1: the first problem\n  another problem\n")
    assert message.endswith(
        f"\n  another problem\n  … and {diagnostic.count(chr(10)) - 19} more lines"
    )
    assert len(message.splitlines()) == 21
    assert failed.value.exit_code == 1
    assert failed.value.log == sessions.last_log
    (call,) = fake_cli_on_path.claude.calls
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)


def test_a_failed_turn_with_a_huge_message_fails_with_a_bounded_message(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.codex.script(
        cli_steps.raw(b'{"type":"turn.failed","error":{"message":"overloaded: '),
        cli_steps.raw(b"x", repeat=3_000_000),  # within the parse cap
        cli_steps.raw(b'"}}\n'),
        steps.exit(1, abrupt=True),
    )

    with pytest.raises(SessionFailed) as failed, within(codex(), tmp_path) as sessions:
        sessions.run("implement", "go")

    assert str(failed.value) == "codex exited 1: overloaded: " + "x" * 1988 + "… (cut short)"
    assert failed.value.diagnostic == cut("overloaded: " + "x" * 3_000_000)  # bounded, noted
    (call,) = fake_cli_on_path.codex.calls
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)


@pytest.mark.parametrize("where", ["stream", "stderr"])
def test_a_failure_message_cannot_drive_the_terminal(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, where: str
) -> None:
    hostile = "first line\nboom\x1b]0;owned\x07\x1b[2J\x08\x08\x08\x08fine"
    if where == "stream":
        fake_cli_on_path.claude.script(fake.fail_turn(hostile))
    else:  # the last line of stderr is the diagnostic
        fake_cli_on_path.claude.script(cli_steps.no_events(), fake.stderr(hostile), steps.exit(1))

    with pytest.raises(SessionFailed) as failed, within(claude(), tmp_path) as sessions:
        sessions.run("implement", "go")

    shown = "boom\\x1b]0;owned\\x07\\x1b[2J\\x08\\x08\\x08\\x08fine"
    if where == "stream":  # the whole error: newlines kept (indented), as errors may span lines
        assert str(failed.value) == f"claude exited 1: first line\n  {shown}"
        assert failed.value.diagnostic == hostile  # as it was, for code
    else:
        assert str(failed.value) == f"claude exited 1: {shown}"
    (call,) = fake_cli_on_path.claude.calls
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)


# Progress lines made of stream data


@pytest.mark.parametrize("choice", CHOICES, ids=IDS)
def test_stream_data_cannot_forge_progress_lines_or_reach_the_terminal_raw(
    fake_cli_on_path: FakeCLIs,
    tmp_path: Path,
    choice: Choice,
    capfd: pytest.CaptureFixture[str],
) -> None:
    forged = "x\nthirdshift: 00:00:00 implement: session ended after 0s\x1b]0;owned\x07\x1b[2J"
    cli = fake_cli_on_path.harness(choice.harness.name)
    cli.script(
        steps.edit(forged, "a"),
        steps.edit(forged.replace("\n", "\u2028"), "b"),
        steps.edit("c", "c"),
    )
    with Sessions.within(Logs(tmp_path / "logs", "repo"), tmp_path, choice) as sessions:
        sessions.run("implement", "go")

    err = capfd.readouterr().err
    assert "\x1b" not in err
    assert "\u2028" not in err
    lines = err.splitlines()
    assert len(lines) == 6, lines
    assert all(re.fullmatch(r"thirdshift: \d\d:\d\d:\d\d \S.*", line) for line in lines)
    assert len([line for line in lines if "session ended" in line]) == 3  # 1 real, 2 defused
    assert lines[2].endswith(
        "x\\x0athirdshift: 00:00:00 implement: session ended after 0s\\x1b]0;owned\\x07\\x1b[2J"
    )
    assert lines[3].endswith(
        "x\\u2028thirdshift: 00:00:00 implement: session ended after 0s\\x1b]0;owned\\x07\\x1b[2J"
    )
    (call,) = cli.calls
    assert_logged_exactly(log_of(tmp_path / "logs", "implement"), call)
