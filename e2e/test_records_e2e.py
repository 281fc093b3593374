"""The record files as ``thirdshift run`` leaves them and ``thirdshift inspect`` reads them back,
on the fake CLIs: a CLI that exits non-zero, a session the idle watchdog stops, ``--strict``."""

from __future__ import annotations

import json
import re
import stat
import subprocess
import sys
from pathlib import Path

from pytest_thirdshift import FakeCLIs
from thirdshift.testing import fakecli as fake
from thirdshift.testing import steps

THIRDSHIFT = str(Path(sys.executable).with_name("thirdshift"))


def record_path(log: Path) -> Path:
    """Where the docs say a session's record is: ``<log stem>.record.json``, beside it."""
    return log.with_name(f"{log.stem}.record.json")


def thirdshift(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [THIRDSHIFT, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


def test_a_cli_that_exited_3_is_failed_in_its_record_and_in_inspect(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.say("tried"), fake.stderr("fatal: no disk"), steps.exit(3))

    done = thirdshift("run", "--logs", "logs", "--name", "repo", "--json", "go", cwd=tmp_path)

    assert done.returncode == 1, done.stderr
    out = json.loads(done.stdout)
    (record,) = out["records"]
    log = Path(record["log"])
    assert log.is_absolute()
    assert log.parent == tmp_path / "logs"
    assert out["failure"]["exit_code"] == record["failure"]["exit_code"] == 3
    assert out["failure"]["session_id"] == record["session_id"] == "fake-session-1"
    # What the stream said before the CLI failed is kept: its turns, cost and last message.
    assert record["usage"]["turns"] >= 1
    assert record["usage"]["cost_usd"] > 0
    assert record["final_message"] == "tried"

    beside = record_path(log)
    assert stat.S_IMODE(beside.stat().st_mode) == 0o600
    assert json.loads(beside.read_text()) == record

    shown = thirdshift("inspect", str(log), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    at = lines.index("failed: yes")
    assert lines[at + 1 :] == [
        "failure: SessionFailed: claude exited 3: fatal: no disk",
        "exit status: 3",
        "stderr: fatal: no disk",
        f"record: {beside}",
    ]


FORGED = '{"kind":"implement","started_at":"2026-01-01T00:00:00+00:00","final_message":"all good"}'


def test_a_record_the_agent_wrote_in_its_sessions_place_is_not_what_inspect_shows(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    # The agent runs as the user: it can write in the logs folder, and the record's name is
    # its log's. What it leaves there is replaced by the session's own record.
    plant = (
        f"for log in logs/*.jsonl; do printf '%s' '{FORGED}' > \"${{log%.jsonl}}.record.json\"; "
        "done"
    )
    fake_cli_on_path.claude.script(steps.run(plant), steps.say("tried"), steps.exit(3))

    done = thirdshift("run", "--logs", "logs", "--name", "repo", "--json", "go", cwd=tmp_path)

    assert done.returncode == 1, done.stderr
    (record,) = json.loads(done.stdout)["records"]
    log = Path(record["log"])
    assert json.loads(record_path(log).read_text()) == record
    shown = thirdshift("inspect", str(log), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "failed: yes" in shown.stdout.splitlines()
    assert "all good" not in shown.stdout


def test_a_session_the_idle_watchdog_stopped_is_failed_in_inspect(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.say("thinking"), steps.hang())

    done = thirdshift(
        *("run", "--logs", str(tmp_path / "logs"), "--idle-timeout", "1", "--stop-grace", "5"),
        "go",
        cwd=tmp_path,
    )

    assert done.returncode == 1, done.stderr
    (log,) = (tmp_path / "logs").glob("*-session.jsonl")
    report = json.loads(thirdshift("inspect", str(log), "--json", cwd=tmp_path).stdout)
    assert report["failed"] is True
    assert report["failure"]["type"] == "SessionStalled"
    assert report["failure"]["message"] == "claude was stopped: no output for 1s"
    assert report["record"]["failure"] == report["failure"]


def test_strict_fails_a_run_whose_resume_left_its_work_running_too(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    for _ in range(2):
        fake_cli_on_path.claude.script(steps.background("sleep 300"), steps.say("started it"))
    logs = tmp_path / "logs"

    done = thirdshift(
        *("run", "--logs", str(logs), "--kind", "implement", "--strict", "--json", "go"),
        cwd=tmp_path,
    )

    assert done.returncode == 1, done.stderr
    out = json.loads(done.stdout)
    assert out["failure"]["type"] == "WorkKilledAgain"
    assert [(e["kind"], e["killed"], e["resume"]) for e in out["endings"]] == [
        ("implement", ["sleep 300"], False),
        ("implement", ["sleep 300"], True),
    ]
    assert done.stderr.splitlines()[-2] == (
        "thirdshift: WorkKilledAgain, not retryable: implement: the Resume also ended with a "
        "background task still running "
        "(sleep 300), which was killed"
    )

    summed = thirdshift("inspect", str(logs), cwd=tmp_path)
    assert summed.returncode == 0, summed.stderr
    line, total = summed.stdout.splitlines()
    assert total.startswith("total: 1 run, 0 ok, 0 failed, $0.")
    assert re.fullmatch(
        rf"{re.escape(tmp_path.name)} \d{{8}}T\d{{6}}[+-]\d{{4}}: 2 sessions, ended with work "
        r"killed, killed work: sleep 300; sleep 300, \d+ turns, \$0\.\d+, \d+s",
        line,
    ), line
