"""``thirdshift run`` in-process, on a ScriptedOutside: exit codes, --json, limits, -- ARGS."""

from __future__ import annotations

import argparse
import io
import json
import signal
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from thirdshift import (
    AuthFailed,
    Overloaded,
    RateLimited,
    SessionFailed,
    Usage,
    UsageLimitReached,
)
from thirdshift._cli import durations, main
from thirdshift.testing import ScriptedOutside, default_outside


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOutside]:
    monkeypatch.chdir(tmp_path)
    outside = ScriptedOutside()
    with default_outside(outside):
        yield outside


def run(tmp_path: Path, *args: str) -> int:
    return main(["run", "--logs", str(tmp_path / "logs"), *args])


@pytest.mark.parametrize(
    "failure",
    [
        RateLimited("claude exited 1: 429"),
        UsageLimitReached("codex exited 1: usage limit"),
        Overloaded("claude exited 1: 529"),
    ],
)
def test_a_session_failed_on_a_limit_exits_75(
    scripted: ScriptedOutside,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    failure: SessionFailed,
) -> None:
    scripted.fails(failure)

    assert run(tmp_path, "go") == 75
    assert f"thirdshift: {type(failure).__name__}, retryable: {failure}\n" in (
        capsys.readouterr().err
    )


def test_refused_credentials_exit_77_saying_a_retry_will_not_help(
    scripted: ScriptedOutside, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.fails(AuthFailed("claude exited 1: Invalid API key"))

    assert run(tmp_path, "go") == 77
    assert "thirdshift: AuthFailed, not retryable: claude exited 1: Invalid API key\n" in (
        capsys.readouterr().err
    )


def test_any_other_failure_exits_1(
    scripted: ScriptedOutside, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.fails(SessionFailed("claude exited 3"))

    assert run(tmp_path, "go") == 1
    assert "thirdshift: SessionFailed, not retryable: claude exited 3\n" in (
        capsys.readouterr().err
    )


def test_an_unquoted_prompt_of_several_words_is_told_how_to_quote_it(
    scripted: ScriptedOutside, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(tmp_path, "fix", "the", "bug") == 2
    assert capsys.readouterr().err == (
        "thirdshift: the prompt is one argument, not 3: quote it (thirdshift run 'fix the bug') "
        "or give it on stdin with - (thirdshift run - < prompt.md)\n"
    )
    assert scripted.sessions == []


def test_wait_for_limits_waits_and_continues(
    scripted: ScriptedOutside, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    soon = datetime.now(UTC) + timedelta(seconds=30)
    scripted.fails(RateLimited("429", retry_at=soon, session_id="s1"))
    scripted.ends(session_id="s1", final_message="carried on")

    assert run(tmp_path, "--wait-for-limits", "2m", "go") == 0

    (waited,) = scripted.waits
    assert 0 < waited <= 30
    assert [call.kind for call in scripted.sessions] == ["session", "session-continued"]
    assert capsys.readouterr().out == "carried on\n"


def test_json_prints_every_record_instead_of_the_final_message(
    scripted: ScriptedOutside, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    usage = Usage(turns=2, input_tokens=100, output_tokens=20, cost_usd=0.0012, models=("m",))
    scripted.ends(session_id="s1", killed=("pytest -x",), final_message="waiting")
    scripted.ends(session_id="s1", final_message="all green", usage=usage)

    assert run(tmp_path, "--json", "--kind", "implement", "go") == 0

    printed = json.loads(capsys.readouterr().out)
    assert printed["final_message"] == "all green"
    assert printed["failure"] is None
    first, resume = printed["records"]
    assert (first["kind"], first["session_id"], first["killed"]) == (
        "implement",
        "s1",
        ["pytest -x"],
    )
    assert first["usage"] is None
    assert resume["kind"] == "implement-resume"
    assert resume["final_message"] == "all green"
    assert resume["usage"] == {
        "turns": 2,
        "input_tokens": 100,
        "output_tokens": 20,
        "cached_input_tokens": None,
        "cost_usd": 0.0012,
        "models": ["m"],
        "billing": None,
        "subagents": None,
    }
    assert resume["log"] == str(scripted.sessions[1].log)
    datetime.fromisoformat(resume["started_at"])  # ISO 8601


def test_json_on_a_failure_names_it_with_its_retry_time(
    scripted: ScriptedOutside, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    when = datetime(2026, 12, 1, 5, 12, tzinfo=UTC)
    scripted.fails(UsageLimitReached("usage limit", resets_at=when, session_id="s9"))

    assert run(tmp_path, "--json", "go") == 75

    printed = json.loads(capsys.readouterr().out)
    expected = {
        "type": "UsageLimitReached",
        "message": "usage limit",
        "retry_at": "2026-12-01T05:12:00+00:00",
        "exit_code": None,
        "signal": None,
        "session_id": "s9",
    }
    assert printed["failure"] == expected
    assert printed["records"][0]["failure"] == expected
    assert printed["records"][0]["session_id"] == "s9"


def test_json_endings_name_every_session_whose_work_was_killed(
    scripted: ScriptedOutside, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.ends(session_id="s1", killed=("pytest -x",), final_message="waiting")
    scripted.ends(session_id="s1", final_message="all green")

    assert run(tmp_path, "--json", "--kind", "implement", "go") == 0

    printed = json.loads(capsys.readouterr().out)
    first_log = str(scripted.sessions[0].log)
    assert printed["endings"] == [
        {"kind": "implement", "killed": ["pytest -x"], "resume": False, "log": first_log}
    ]


def test_json_endings_say_which_was_the_resume(
    scripted: ScriptedOutside, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.ends(session_id="s1", killed=("pytest -x",))
    scripted.ends(session_id="s1", killed=("npm run e2e", "pytest -x"))

    assert run(tmp_path, "--json", "go") == 0

    endings = json.loads(capsys.readouterr().out)["endings"]
    assert [(ending["kind"], ending["killed"], ending["resume"]) for ending in endings] == [
        ("session", ["pytest -x"], False),
        ("session", ["npm run e2e", "pytest -x"], True),
    ]


def test_json_log_paths_are_absolute_under_a_relative_logs_folder(
    scripted: ScriptedOutside, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.ends(session_id="s1", killed=("pytest -x",))
    scripted.ends(session_id="s1")

    assert main(["run", "--logs", "logs", "--name", "repo", "--json", "go"]) == 0

    printed = json.loads(capsys.readouterr().out)
    logs = [record["log"] for record in printed["records"]] + [printed["endings"][0]["log"]]
    assert all(Path(log).is_absolute() for log in logs), logs
    assert Path(logs[0]).parent == tmp_path / "logs"


def test_json_failure_carries_the_exit_status_and_the_session_id(
    scripted: ScriptedOutside, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.fails(SessionFailed("claude exited by signal SIGKILL", signal=signal.SIGKILL))
    scripted.fails(SessionFailed("claude exited 3", exit_code=3, session_id="s4"))

    assert run(tmp_path, "--json", "go") == 1
    assert run(tmp_path, "--json", "go") == 1

    killed, exited = (json.loads(line)["failure"] for line in capsys.readouterr().out.splitlines())
    assert (killed["exit_code"], killed["signal"], killed["session_id"]) == (None, "SIGKILL", None)
    assert (exited["exit_code"], exited["signal"], exited["session_id"]) == (3, None, "s4")


def test_strict_fails_a_run_whose_resume_ended_with_its_work_killed_too(
    scripted: ScriptedOutside, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.ends(session_id="s1", killed=("pytest -x",))
    scripted.ends(session_id="s1", killed=("pytest -x",), final_message="gave up")

    assert run(tmp_path, "--strict", "--json", "--kind", "implement", "go") == 1

    printed = json.loads(capsys.readouterr().out)
    assert printed["failure"]["type"] == "WorkKilledAgain"
    assert printed["failure"]["message"] == (
        "implement: the Resume also ended with a background task still running (pytest -x), "
        "which was killed"
    )
    assert printed["failure"]["session_id"] == "s1"
    assert [ending["resume"] for ending in printed["endings"]] == [False, True]


def test_without_strict_the_same_run_carries_on(
    scripted: ScriptedOutside, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted.ends(session_id="s1", killed=("pytest -x",))
    scripted.ends(session_id="s1", killed=("pytest -x",), final_message="gave up")

    assert run(tmp_path, "go") == 0
    assert capsys.readouterr().out == "gave up\n"


def run_json(tmp_path: Path, *args: str) -> tuple[int, bytes]:
    """``run --json ARGS``, its stdout UTF-8 that raises on what it cannot encode (as a
    terminal's or a pipe's does, where capsys's would not); the exit code and the bytes."""
    written = io.BytesIO()
    strict = io.TextIOWrapper(written, encoding="utf-8")
    real, sys.stdout = sys.stdout, strict
    try:
        code = run(tmp_path, "--json", *args)
        strict.flush()
    finally:
        sys.stdout = real
        strict.detach()
    return code, written.getvalue()


def assert_one_ascii_json_object(out: bytes) -> dict[str, Any]:
    """One line of printable ASCII, parsing as one JSON object."""
    assert out.endswith(b"\n")
    assert out.count(b"\n") == 1
    assert all(0x20 <= byte < 0x7F for byte in out[:-1]), out
    printed = json.loads(out)
    assert isinstance(printed, dict)
    return printed


def test_json_with_a_lone_surrogate_in_the_final_message_is_still_one_object(
    scripted: ScriptedOutside, tmp_path: Path
) -> None:
    scripted.ends(session_id="s1", final_message="bad \ud800 text")

    code, out = run_json(tmp_path, "go")

    assert code == 0
    printed = assert_one_ascii_json_object(out)
    assert printed["final_message"] == "bad \ud800 text"
    assert printed["records"][0]["final_message"] == "bad \ud800 text"


HOSTILE = "esc \x1b[2J c1 \x9b31m del \x7f rlo \u202e ls \u2028 ps \u2029 caf\u00e9 \U0001f600"


def test_json_escapes_every_control_and_every_non_ascii_character(
    scripted: ScriptedOutside, tmp_path: Path
) -> None:
    scripted.ends(session_id="s1", killed=(HOSTILE,), final_message="waiting")
    scripted.fails(SessionFailed(HOSTILE, session_id="s1"))

    code, out = run_json(tmp_path, "go")

    assert code == 1
    printed = assert_one_ascii_json_object(out)
    assert b"\\u009b31m" in out  # C1 controls, as \uXXXX: a terminal never sees them raw
    assert b"\\u007f" in out
    assert printed["records"][0]["killed"] == [HOSTILE]
    assert printed["failure"]["message"] == HOSTILE


def test_json_of_a_count_too_large_to_print_is_still_one_object(
    scripted: ScriptedOutside, tmp_path: Path
) -> None:
    # Python prints no int over 4,300 digits; a stream's token counts, added up, can be one.
    huge = 10**5000
    scripted.ends(session_id="s1", usage=Usage(input_tokens=huge, output_tokens=7))

    code, out = run_json(tmp_path, "go")

    assert code == 0
    printed = assert_one_ascii_json_object(out)
    usage = printed["records"][0]["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (None, 7)


def test_json_of_a_cost_that_is_no_number_is_still_valid_json(
    scripted: ScriptedOutside, tmp_path: Path
) -> None:
    scripted.ends(session_id="s1", usage=Usage(cost_usd=float("nan")))

    code, out = run_json(tmp_path, "go")

    assert code == 0
    assert b"NaN" not in out  # Python's json reads it; JSON has no NaN, so jq and others do not
    assert assert_one_ascii_json_object(out)["records"][0]["usage"]["cost_usd"] is None


def test_arguments_after_a_double_dash_go_to_the_cli(
    scripted: ScriptedOutside, tmp_path: Path
) -> None:
    scripted.ends()

    assert run(tmp_path, "go", "--", "--max-turns", "3", "--") == 0

    (call,) = scripted.sessions
    assert call.choice is not None
    assert call.choice.extra_args == ("--max-turns", "3", "--")
    assert call.prompt == "go"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90.0), ("30m", 1800.0), ("2h", 7200.0), ("1h30m", 5400.0), ("45", 45.0), ("0", 0.0)],
)
def test_durations(text: str, seconds: float) -> None:
    assert durations.seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "5x", "1h 30m", "-1", "nan", "inf", "m"])
def test_durations_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        durations.seconds(text)


def test_a_zero_limit_is_no_limit() -> None:
    assert durations.limit("0") is None
    assert durations.limit("0s") is None
    assert durations.limit("2m") == 120.0


def test_a_prompt_is_written_as_the_bytes_it_was_read_from() -> None:
    from thirdshift._machine.adapter import prompt_bytes

    assert prompt_bytes("fix \udcff it, café") == b"fix \xff it, caf\xc3\xa9"
    assert prompt_bytes(b"\xfe\xff".decode("utf-8", "surrogateescape")) == b"\xfe\xff"
    with pytest.raises(ValueError, match="the prompt holds '\\\\ud800', which is no text"):
        prompt_bytes("a \ud800 b")
