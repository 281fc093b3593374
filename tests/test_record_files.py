"""Each session's record beside its log (``<log stem>.record.json``), and ``strict``, in-process."""

from __future__ import annotations

import errno
import json
import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest
from record_helpers import LoggingOutside

from pytest_thirdshift import ScriptedOutside
from thirdshift import (
    Ended,
    Interrupted,
    LaterStepFailed,
    Logs,
    SessionFailed,
    SessionRecord,
    Sessions,
    SessionStalled,
    Usage,
    WorkKilledAgain,
    claude,
)
from thirdshift import _record_files as files
from thirdshift._json_form import record_json
from thirdshift._logs import command_stamp, create_log_files, record_path

USED = Usage(turns=3, input_tokens=40, output_tokens=9, cost_usd=0.0007, models=("m",))
KILLED_ONE = "ended with a background task still running (pytest -x), which was killed"


@pytest.fixture
def logs(tmp_path: Path) -> Logs:
    return Logs(tmp_path / "logs", "repo")


def written(record: SessionRecord) -> dict[str, object]:
    return json.loads(record_path(record.log).read_text())  # type: ignore[no-any-return]


def test_a_session_that_ended_leaves_its_record_beside_its_log(logs: Logs) -> None:
    script = ScriptedOutside().ends(session_id="s1", final_message="done", usage=USED)
    sessions = Sessions(logs, LoggingOutside(script))

    sessions.run("implement", "go")

    (record,) = sessions.records
    path = record_path(record.log)
    assert path.name == f"repo-{command_stamp()}-implement.record.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert written(record) == record_json(record)
    assert written(record)["usage"] == {
        "turns": 3,
        "input_tokens": 40,
        "output_tokens": 9,
        "cached_input_tokens": None,
        "cost_usd": 0.0007,
        "models": ["m"],
        "billing": None,
        "subagents": None,
    }
    # Written whole under another name, then linked: nothing else is left in the folder.
    assert sorted(p.name for p in logs.dir.iterdir()) == sorted(
        [record.log.name, record.log.with_suffix(".stderr").name, path.name]
    )


@pytest.mark.parametrize(
    "failure",
    [
        SessionFailed("claude exited 3", exit_code=3, session_id="s1", usage=USED),
        SessionStalled("claude was stopped: no output for 1s", why="no output for 1s"),
        Interrupted(usage=USED),
    ],
)
def test_a_failed_or_interrupted_session_leaves_its_record_too(
    logs: Logs, failure: BaseException
) -> None:
    sessions = Sessions(logs, LoggingOutside(ScriptedOutside().fails(failure)))

    with pytest.raises(type(failure)):
        sessions.run("implement", "go")

    (record,) = sessions.records
    on_disk = written(record)
    assert on_disk == record_json(record)
    assert on_disk["failure"] is not None
    assert on_disk["failure"]["type"] == type(failure).__name__  # type: ignore[index]
    if isinstance(failure, SessionFailed) and failure.exit_code is not None:
        assert on_disk["failure"]["exit_code"] == 3  # type: ignore[index]
    assert on_disk["usage"] == record_json(record)["usage"]


def test_a_stand_in_that_writes_no_log_leaves_no_record_file(logs: Logs) -> None:
    sessions = Sessions(logs, ScriptedOutside().ends(session_id="s1", killed=("pytest",)).ends())

    sessions.run("implement", "go")

    assert len(sessions.records) == 2
    assert not logs.dir.exists()


def test_a_record_planted_before_the_session_moves_it_to_the_next_name(logs: Logs) -> None:
    # An earlier session's agent knows the command stamp, so it can name a later session's
    # record before that session starts.
    script = ScriptedOutside().ends(session_id="s1", final_message="done")
    planted = record_path(logs.path("implement"))
    planted.parent.mkdir(mode=0o700)
    forged = '{"kind": "implement", "started_at": "2026-01-01T00:00:00+00:00"}\n'
    planted.write_text(forged)

    sessions = Sessions(logs, LoggingOutside(script))
    assert sessions.run_to_final_message("implement", "go") == "done"

    (record,) = sessions.records
    assert record.log == logs.path("implement", 2)
    assert written(record) == record_json(record)
    assert planted.read_text() == forged  # beside no log of this session's
    assert not logs.path("implement").exists()


class PlantingOutside(LoggingOutside):
    """Logs each session as the real adapter does; while it runs, its agent puts a record of
    its own in the record's place (a file of its own, or written into the one there)."""

    def __init__(self, script: ScriptedOutside, how: str) -> None:
        super().__init__(script)
        self.how = how

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
        for fd in create_log_files(log):
            os.close(fd)
        path = record_path(log)
        if self.how == "replaced":
            path.unlink(missing_ok=True)
        path.write_text(FORGED)
        return self.script.run_session(kind, resume, prompt, log)


FORGED = '{"kind": "implement", "started_at": "2026-01-01T00:00:00+00:00", "failure": null}\n'


@pytest.mark.parametrize("how", ["written into", "replaced"])
def test_a_record_the_sessions_agent_wrote_is_replaced_by_the_sessions_own(
    logs: Logs, how: str
) -> None:
    failure = SessionFailed("claude exited 3", exit_code=3, session_id="s1")
    sessions = Sessions(logs, PlantingOutside(ScriptedOutside().fails(failure), how))

    with pytest.raises(SessionFailed):
        sessions.run("implement", "go")

    (record,) = sessions.records
    on_disk = written(record)
    assert on_disk == record_json(record)
    assert on_disk["failure"]["exit_code"] == 3  # type: ignore[index]
    assert [p.name for p in logs.dir.iterdir() if p.name.startswith(".")] == []


def test_a_record_that_cannot_be_written_leaves_nothing_in_its_place(
    logs: Logs, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = ScriptedOutside().ends(session_id="s1", final_message="done")
    sessions = Sessions(logs, PlantingOutside(script, "written into"))

    def full(*_: object, **__: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files, "_write_new", full)
    assert sessions.run_to_final_message("implement", "go") == "done"

    (record,) = sessions.records
    assert not record_path(record.log).exists()
    assert script.progress[-1] == (
        f"implement: its record was not written: could not write {record_path(record.log)}: "
        "No space left on device"
    )


def test_the_empty_file_that_holds_a_records_name_reads_as_no_record(tmp_path: Path) -> None:
    log = tmp_path / "x.jsonl"
    record_path(log).write_bytes(b"")
    assert files.read_record(log) is None


def test_a_record_reads_back_as_it_was_written(logs: Logs) -> None:
    script = ScriptedOutside().fails(SessionFailed("claude exited 3", exit_code=3, usage=USED))
    sessions = Sessions(logs, LoggingOutside(script))
    with pytest.raises(SessionFailed):
        sessions.run("implement", "go")

    (record,) = sessions.records
    assert files.read_record(record.log) == record_json(record)
    assert files.read_record(logs.dir / "other.jsonl") is None


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"not json", "it is not JSON"),
        (b"[1, 2]", "it is not a JSON object"),
        (b'{"kind": "x"}', "no started_at"),
        (b'{"kind": "x", "started_at": "yesterday"}', "its started_at is not what a record holds"),
        (
            b'{"kind": "x", "started_at": "2026-12-01T04:00:00+00:00", "duration": NaN}',
            "its duration is not what a record holds",
        ),
        (
            b'{"kind": "x", "started_at": "2026-12-01T04:00:00+00:00", "killed": [1]}',
            "its killed is not what a record holds",
        ),
        (
            b'{"kind": "x", "started_at": "2026-12-01T04:00:00+00:00", "usage": {"turns": true}}',
            "its usage is not what a record holds",
        ),
        (
            b'{"kind": "x", "started_at": "2026-12-01T04:00:00+00:00", "failure": {"type": "X"}}',
            "its failure is not what a record holds",
        ),
        (
            b'{"kind": "x", "started_at": "2026-12-01T04:00:00+00:00", "usage": {"billing": "x"}}',
            "its usage is not what a record holds",
        ),
        (
            b'{"kind": "x", "started_at": "2026-12-01T04:00:00+00:00", "usage": {"subagents": 1}}',
            "its usage is not what a record holds",
        ),
    ],
)
def test_a_file_that_holds_no_record_is_refused_saying_why(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    log = tmp_path / "r.jsonl"
    record_path(log).write_bytes(content)
    with pytest.raises(files.RecordUnreadable, match=problem):
        files.read_record(log)


def test_a_fifo_or_a_huge_file_in_a_records_place_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.mkfifo(record_path(tmp_path / "fifo.jsonl"))
    with pytest.raises(files.RecordUnreadable, match="not a regular file"):
        files.read_record(tmp_path / "fifo.jsonl")

    monkeypatch.setattr(files, "MAX_RECORD_BYTES", 16)
    record_path(tmp_path / "big.jsonl").write_text(json.dumps({"kind": "x" * 32}))
    with pytest.raises(files.RecordUnreadable, match="is over"):
        files.read_record(tmp_path / "big.jsonl")


def test_a_record_missing_fields_of_a_later_version_reads_them_as_null(tmp_path: Path) -> None:
    log = tmp_path / "r.jsonl"
    when = datetime(2026, 12, 1, 4, tzinfo=UTC).isoformat()
    record_path(log).write_text(json.dumps({"kind": "x", "started_at": when, "new": 1}))
    read = files.read_record(log)
    assert read is not None
    assert (read["kind"], read["killed"], read["usage"], read["failure"]) == ("x", [], None, None)
    assert "new" not in read


# strict


def test_strict_makes_a_resume_that_ended_the_same_way_raise_work_killed_again(
    logs: Logs, scripted_outside: ScriptedOutside
) -> None:
    scripted_outside.ends(session_id="s1", killed=("pytest -x",))
    scripted_outside.ends(session_id="s1", killed=("pytest -x",), usage=USED)

    with (
        pytest.raises(WorkKilledAgain) as raised,
        Sessions.within(logs, logs.dir, claude(), strict=True, progress=lambda _: None) as s,
    ):
        s.run("implement", "go")

    error = raised.value
    assert isinstance(error, SessionFailed)
    assert not isinstance(error, LaterStepFailed)
    assert str(error) == f"implement: the Resume also {KILLED_ONE}"
    assert (error.killed, error.session_id, error.usage) == (("pytest -x",), "s1", USED)
    assert error.log == s.last_log == s.records[1].log
    assert [record.kind for record in s.records] == ["implement", "implement-resume"]


def test_strict_lets_a_resume_that_finished_its_work_pass(
    logs: Logs, scripted_outside: ScriptedOutside
) -> None:
    scripted_outside.ends(session_id="s1", killed=("pytest -x",))
    scripted_outside.ends(session_id="s1", final_message="all green")

    with Sessions.within(logs, logs.dir, claude(), strict=True, progress=lambda _: None) as s:
        assert s.run_to_final_message("implement", "go") == "all green"


def test_strict_is_off_by_default(logs: Logs) -> None:
    outside = ScriptedOutside().ends(session_id="s1", killed=("pytest -x",))
    outside.ends(session_id="s1", killed=("pytest -x",), final_message="gave up")

    assert Sessions(logs, outside).run_to_final_message("implement", "go") == "gave up"
