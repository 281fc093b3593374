"""The record of a session whose worker was lost, written by the attempt that takes over, and
the ``temporal`` and ``command`` of every record, read back."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from thirdshift._logs import command_token, record_path
from thirdshift._record_files import read_record
from thirdshift.temporal._lost import LOST, lost_session, recorded

STARTED = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
TEMPORAL = {"workflow_id": "wf", "run_id": "r", "activity_id": "1", "attempt": 1, "host": "q@a"}


@pytest.fixture
def log(tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir(mode=0o700)
    log = folder / "repo-20261201T030000+0000-implement.jsonl"
    log.write_text('{"type":"system","subtype":"init","session_id":"s-1"}\n')
    os.utime(log, (STARTED.timestamp() + 12, STARTED.timestamp() + 12))
    return log


def running(path: Path, **more: Any) -> dict[str, Any]:
    return {
        "kind": "implement",
        "log": str(path),
        "started_at": STARTED.isoformat(),
        "session_id": "s-1",
        "temporal": TEMPORAL,
        **more,
    }


def test_the_lost_session_gets_its_record_beside_its_log(log: Path) -> None:
    record = lost_session(running(log), log.parent)
    assert record is not None

    written = recorded(record, report=lambda _: None)

    assert read_record(log) == {**written, "killed": []}
    assert written["kind"] == "implement"
    assert written["session_id"] == "s-1"
    assert written["duration"] == 12.0  # until its log was last written
    assert written["failure"]["type"] == "SessionFailed"
    assert written["failure"]["message"] == LOST
    assert written["temporal"] == TEMPORAL
    assert written["command"] == command_token()


def test_the_empty_file_that_held_its_records_name_is_no_record(log: Path) -> None:
    # The log files are made with an empty record file, which holds the name while the session
    # runs (#26 L2); a worker killed outright leaves it empty.
    record_path(log).write_bytes(b"")

    record = lost_session(running(log), log.parent)
    assert record is not None
    written = recorded(record, report=lambda _: None)

    assert read_record(log) == {**written, "killed": []}


@pytest.mark.parametrize(
    "change",
    [
        {"kind": "../up"},
        {"kind": 7},
        {"started_at": "yesterday"},
        {"started_at": "2026-12-01T03:00:00"},  # no zone
        {"session_id": 12},
        {"temporal": {"workflow_id": 3}},
        {"log": "relative.jsonl"},
    ],
)
def test_details_that_are_no_running_session_give_none(log: Path, change: dict[str, Any]) -> None:
    assert lost_session(running(log, **change), log.parent) is None
    assert not record_path(log).exists()


def test_a_log_elsewhere_or_already_recorded_is_left_alone(log: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text("")

    assert lost_session(running(elsewhere), log.parent) is None
    assert lost_session("not a mapping", log.parent) is None
    record_path(log).write_text("{}")  # the session ended after all: its record is there
    assert lost_session(running(log), log.parent) is None
