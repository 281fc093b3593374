"""``thirdshift inspect`` with the record files: one log and its record, and a folder of runs."""

from __future__ import annotations

import json
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from harness_helpers import stdout_of
from record_helpers import LoggingOutside

from pytest_thirdshift import ScriptedOutside
from thirdshift import (
    Interrupted,
    Logs,
    SessionFailed,
    SessionRecord,
    Sessions,
    SessionStalled,
    Usage,
)
from thirdshift._cli import main
from thirdshift._json_form import record_json
from thirdshift._logs import record_path, sidecar_path
from thirdshift._record_files import write_record

NOW = datetime(2026, 12, 1, 1, 0, tzinfo=UTC)


def inspect(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main(["inspect", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def failed_session(tmp_path: Path, failure: SessionFailed, stderr: bytes) -> SessionRecord:
    """A session whose stream ended well (a claude capture) but whose CLI then failed."""
    script = ScriptedOutside().fails(failure)
    outside = LoggingOutside(script, stdout_of("claude-fg-tool").read_bytes(), stderr)
    sessions = Sessions(Logs(tmp_path / "logs", "repo"), outside)
    with pytest.raises(type(failure)):
        sessions.run("implement", "go")
    (record,) = sessions.records
    return record


def test_a_cli_that_exited_3_after_a_good_stream_is_said_to_have_failed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    failure = SessionFailed("claude exited 3", exit_code=3, session_id="s1")
    record = failed_session(tmp_path, failure, b"warming up\nfatal: out of cheese\n")

    code, out, err = inspect(capsys, record.log)

    assert (code, err) == (0, "")
    lines = out.splitlines()
    at = lines.index("failed: yes")
    assert lines[at + 1 :] == [
        "failure: SessionFailed: claude exited 3",
        "exit status: 3",
        "stderr: fatal: out of cheese",
        f"record: {record_path(record.log)}",
    ]


def test_a_stopped_sessions_killed_work_is_its_records_none_whatever_its_stream_said(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The stream of a Claude stopped with its tests running says it killed them; the rules
    # count no killed work for a session that was stopped, and so does its record.
    script = ScriptedOutside().fails(Interrupted())
    outside = LoggingOutside(script, stdout_of("claude-bg-skipperms").read_bytes(), b"")
    sessions = Sessions(Logs(tmp_path / "logs", "repo"), outside)
    with pytest.raises(Interrupted):
        sessions.run("implement", "go")
    (record,) = sessions.records
    assert record.killed == ()

    code, out, _ = inspect(capsys, "--json", record.log)

    assert code == 0
    report = json.loads(out)
    assert (report["killed"], report["failure"]["type"]) == ([], "Interrupted")


def test_a_session_a_watchdog_stopped_is_said_to_have_failed_in_json_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    failure = SessionStalled(
        "claude was stopped: no output for 30m", why="no output", signal=signal.SIGTERM
    )
    record = failed_session(tmp_path, failure, b"")

    code, out, _ = inspect(capsys, record.log, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["failed"] is True
    assert report["failure"] == {
        "type": "SessionStalled",
        "message": "claude was stopped: no output for 30m",
        "retry_at": None,
        "exit_code": None,
        "signal": "SIGTERM",
        "session_id": None,
    }
    assert report["record"] == record_json(record)
    assert report["record_file"] == str(record_path(record.log))
    assert report["stderr"] is None  # an empty sidecar has no last line

    _, text, _ = inspect(capsys, record.log)
    assert "exit status: killed by SIGTERM" in text.splitlines()


def test_a_record_that_cannot_be_read_is_warned_of_and_the_stream_read_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "repo.jsonl"
    log.write_bytes(stdout_of("claude-fg-tool").read_bytes())
    record_path(log).write_text("{half a rec")

    code, out, err = inspect(capsys, log)

    assert code == 0
    assert err == (
        f"thirdshift: warning: {record_path(log)} does not hold a record: it is not JSON; "
        "reading the stream alone\n"
    )
    assert "failed: no" in out.splitlines()
    assert out.splitlines()[-1].startswith("record: none beside the log")


# A folder of runs


def session(
    folder: Path,
    stamp: str,
    kind: str,
    *,
    at: timedelta,
    took: float = 1.0,
    usage: Usage | None = None,
    killed: tuple[str, ...] = (),
    failure: SessionFailed | None = None,
    recorded: bool = True,
) -> Path:
    """A log of run ``repo-<stamp>`` in ``folder``, and (if ``recorded``) its record."""
    log = folder / f"repo-{stamp}-{kind}.jsonl"
    log.write_text("")
    sidecar_path(log).write_text("")
    if recorded:
        record = SessionRecord(
            kind=kind,
            log=log,
            session_id="s1",
            killed=killed,
            final_message=None,
            usage=usage,
            started_at=NOW + at,
            duration=took,
            failure=failure,
        )
        assert write_record(record) == record_path(log)
    return log


@pytest.fixture
def night(tmp_path: Path) -> Path:
    """Last night's logs folder: three runs, written in no particular order."""
    folder = tmp_path / "logs"
    folder.mkdir(mode=0o700)
    session(
        folder,
        "20261201T030000+0000",
        "implement",
        at=timedelta(hours=2),
        took=5,
        usage=Usage(turns=3, cost_usd=0.0007),
        failure=SessionFailed("claude exited 3\nand more", exit_code=3),
    )
    session(
        folder,
        "20261201T010000+0000",
        "implement",
        at=timedelta(0),
        took=60,
        usage=Usage(turns=2, cost_usd=0.001),
        killed=("pytest -x",),
    )
    session(
        folder,
        "20261201T010000+0000",
        "implement-resume",
        at=timedelta(seconds=61),
        took=30.5,
        usage=Usage(turns=1, cost_usd=0.0005),
    )
    session(folder, "20261201T020000+0000", "review", at=timedelta(hours=1), recorded=False)
    return folder


LAST_NIGHT = [
    "repo 20261201T010000+0000: 2 sessions, ok, killed work: pytest -x, 3 turns, $0.0015, 1m 30s",
    "repo 20261201T020000+0000: 1 session (1 without a record), ending not recorded, "
    "killed work: none, turns not said, cost not said, duration not known",
    "repo 20261201T030000+0000: 1 session, failed (SessionFailed: claude exited 3), "
    "killed work: none, 3 turns, $0.0007, 5s",
    "total: 3 runs, 1 ok, 1 failed, $0.0022, tokens not said",
]


def test_a_logs_folder_is_one_line_per_run_newest_last(
    capsys: pytest.CaptureFixture[str], night: Path
) -> None:
    code, out, err = inspect(capsys, night)
    assert (code, err) == (0, "")
    assert out.splitlines() == LAST_NIGHT


def test_a_logs_folder_as_json_is_the_same_as_a_list(
    capsys: pytest.CaptureFixture[str], night: Path
) -> None:
    code, out, _ = inspect(capsys, night, "--json")
    assert code == 0
    assert out.count("\n") == 1
    first, unrecorded, failed = json.loads(out)
    assert first == {
        "name": "repo",
        "stamp": "20261201T010000+0000",
        "host": None,
        "workflow_id": None,
        "sessions": 2,
        "unrecorded": 0,
        "ended": "ok",
        "failure": None,
        "killed": ["pytest -x"],
        "turns": 3,
        "cost_usd": pytest.approx(0.0015),
        "tokens": None,
        "duration": 90.5,
        "started_at": NOW.isoformat(),
        "logs": [
            str(night / "repo-20261201T010000+0000-implement.jsonl"),
            str(night / "repo-20261201T010000+0000-implement-resume.jsonl"),
        ],
    }
    assert (unrecorded["ended"], unrecorded["unrecorded"], unrecorded["turns"]) == (
        "unrecorded",
        1,
        None,
    )
    assert failed["ended"] == "failed"
    assert failed["failure"]["exit_code"] == 3


def test_several_logs_named_with_their_sidecars_sum_up_as_their_folder_does(
    capsys: pytest.CaptureFixture[str], night: Path
) -> None:
    everything = sorted(night.iterdir())  # as `thirdshift inspect logs/*` names them
    assert any(path.name.endswith(".record.json") for path in everything)

    code, out, _ = inspect(capsys, *everything)

    assert code == 0
    assert out.splitlines() == LAST_NIGHT


def test_a_run_ended_by_an_interrupt_or_with_its_work_killed_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    session(tmp_path, "20261201T010000+0000", "implement", at=timedelta(0), killed=("sleep 9",))
    session(
        tmp_path,
        "20261201T010000+0000",
        "implement-resume",
        at=timedelta(seconds=5),
        killed=("sleep 9",),
    )

    _, out, _ = inspect(capsys, tmp_path)

    assert out == (
        "repo 20261201T010000+0000: 2 sessions, ended with work killed, "
        "killed work: sleep 9; sleep 9, turns not said, cost not said, 2s\n"
        "total: 1 run, 0 ok, 0 failed, cost not said, tokens not said\n"
    )


def test_an_unreadable_record_in_a_folder_is_warned_of_and_counted_unrecorded(
    capsys: pytest.CaptureFixture[str], night: Path
) -> None:
    broken = night / "repo-20261201T030000+0000-implement.record.json"
    broken.write_text("[]")

    code, out, err = inspect(capsys, night)

    assert code == 0
    assert err == f"thirdshift: warning: {broken} does not hold a record: it is not a JSON object\n"
    assert out.splitlines()[-2].startswith("repo 20261201T030000+0000: 1 session (1 without")


def test_harness_is_for_one_log_only(capsys: pytest.CaptureFixture[str], night: Path) -> None:
    code, out, err = inspect(capsys, night, "--harness", "claude")
    assert (code, out) == (2, "")
    assert err == "thirdshift: --harness reads one log; leave it out to sum up several\n"


def test_a_log_named_that_is_not_there_exits_2(
    capsys: pytest.CaptureFixture[str], night: Path
) -> None:
    missing = night / "gone.jsonl"
    code, out, err = inspect(capsys, night, missing)
    assert (code, out) == (2, "")
    assert err == f"thirdshift: cannot read {missing}: No such file or directory\n"


def test_hostile_names_and_messages_are_shown_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = session(
        tmp_path,
        "20261201T010000+0000",
        "implement",
        at=timedelta(0),
        killed=("evil \x1b[2J",),
        failure=SessionFailed("bad \x1b]0;title\x07 news"),
    )
    hostile = tmp_path / "\x1b[31mrepo-20261201T010000+0000-implement.jsonl"
    log.rename(hostile)
    record_path(log).rename(record_path(hostile))

    _, out, _ = inspect(capsys, tmp_path)

    assert out == (
        "\\x1b[31mrepo 20261201T010000+0000: 1 session, failed (SessionFailed: bad "
        "\\x1b]0;title\\x07 news), killed work: evil \\x1b[2J, turns not said, cost not said, 1s\n"
        "total: 1 run, 0 ok, 1 failed, cost not said, tokens not said\n"
    )
