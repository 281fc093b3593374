"""``thirdshift inspect FOLDER``: runs grouped truthfully (one command's or one activity's
sessions, never more; the worst of their endings), a fleet's folder of hosts, the totals, and
the filters (in-process, on record files written as the rules write them)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from thirdshift import RateLimited, ResumeTargetMissing, SessionFailed, SessionRecord, Usage
from thirdshift._cli import main
from thirdshift._cli.durations import moment
from thirdshift._record_files import write_record
from thirdshift.temporal._lost import LOST

NOW = datetime(2026, 12, 1, 1, 0, tzinfo=UTC)
STAMP = "20261201T010000+0000"


def inspect(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main(["inspect", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def session(
    folder: Path,
    kind: str,
    *,
    name: str = "repo",
    stamp: str = STAMP,
    at: timedelta = timedelta(0),
    failure: SessionFailed | None = None,
    command: str = "c-1",
    temporal: dict[str, Any] | None = None,
    usage: Usage | None = None,
    clash: str = "",
) -> Path:
    """A session's log and record in ``folder``, as a command (or an activity) leaves them."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    log = folder / f"{name}-{stamp}-{kind}{clash}.jsonl"
    log.write_text("")
    record = SessionRecord(
        kind=kind,
        log=log,
        session_id="s1",
        killed=(),
        final_message=None,
        usage=usage,
        started_at=NOW + at,
        duration=2,
        failure=failure,
        temporal=temporal,
        command=command,
    )
    write_record(record)
    return log


def where(workflow: str, attempt: int, host: str) -> dict[str, Any]:
    return {
        "workflow_id": workflow,
        "run_id": f"{workflow}-run",
        "activity_id": "1",
        "attempt": attempt,
        "host": host,
    }


def test_two_commands_of_one_name_started_in_the_same_second_are_two_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    session(tmp_path, "nightly", command="first")
    failed = SessionFailed("claude exited 1", exit_code=1)
    session(tmp_path, "nightly", command="second", failure=failed, clash="-2", at=timedelta(1))

    code, out, _ = inspect(capsys, tmp_path)

    assert code == 0
    first, second, total = out.splitlines()
    assert ": 1 session, ok," in first
    assert ": 1 session, failed (SessionFailed: claude exited 1)" in second
    assert total == "total: 2 runs, 1 ok, 1 failed, cost not said, tokens not said"


def test_a_run_ends_as_the_worst_of_its_sessions_but_what_was_carried_on_is_not_a_failure(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hidden, carried = tmp_path / "hidden", tmp_path / "carried"
    session(hidden, "implement", failure=SessionFailed("claude exited 3", exit_code=3))
    session(hidden, "review", at=timedelta(seconds=10))  # a later success hides nothing
    session(carried, "implement", failure=RateLimited("429"))
    session(carried, "implement-continued", at=timedelta(minutes=2))  # the limit waited out

    _, hidden_out, _ = inspect(capsys, hidden)
    _, carried_out, _ = inspect(capsys, carried)

    assert "2 sessions, failed (SessionFailed: claude exited 3)" in hidden_out
    assert "2 sessions, ok," in carried_out


def test_a_fleet_s_folder_is_read_with_a_host_column_and_a_lost_attempt_joins_its_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    a, b = logs / "host-a", logs / "host-b"
    # One worker's process stamped the lost attempt's log; the next worker's, the continuation.
    lost = SessionFailed(LOST)
    session(a, "implement", temporal=where("wf-1", 1, "q@a"), failure=lost, command="w1")
    session(
        a,
        "implement-continued",
        stamp="20261201T010500+0000",
        at=timedelta(minutes=5),
        temporal=where("wf-1", 2, "q@a"),
        command="w2",
        usage=Usage(input_tokens=100, output_tokens=20, cost_usd=0.25),
    )
    # Two workflows of one worktree name, on one worker, stamped alike: two runs.
    session(b, "review", temporal=where("wf-2", 1, "q@b"), at=timedelta(seconds=1))
    session(
        b,
        "review",
        temporal=where("wf-3", 1, "q@b"),
        at=timedelta(seconds=2),
        clash="-2",
        failure=SessionFailed("claude exited 2", exit_code=2),
    )

    code, out, err = inspect(capsys, logs)

    assert (code, err) == (0, "")
    continued, reviewed, failed, total = out.splitlines()
    assert continued.startswith(f"q@a  repo {STAMP} wf-1: 2 sessions, ok,")
    assert reviewed.startswith(f"q@b  repo {STAMP} wf-2: 1 session, ok,")
    assert failed.startswith(f"q@b  repo {STAMP} wf-3: 1 session, failed")
    assert total == "total: 3 runs, 2 ok, 1 failed, $0.25, 120 tokens"


def test_a_host_s_folder_names_the_runs_its_records_do_not_place(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    session(tmp_path / "logs" / "host-a", "implement")

    _, out, _ = inspect(capsys, tmp_path / "logs")

    assert out.splitlines()[0].startswith(f"host-a  repo {STAMP}: 1 session, ok")


@pytest.fixture
def three(tmp_path: Path) -> Path:
    """Three runs: ``nightly`` an hour ago and failed, ``nightly`` now, ``weekly`` now."""
    failed = SessionFailed("claude exited 1", exit_code=1)
    session(tmp_path, "implement", name="nightly", command="x", failure=failed)
    later = "20261201T020000+0000"
    session(tmp_path, "implement", name="nightly", stamp=later, at=timedelta(hours=1))
    session(tmp_path, "implement", name="weekly", stamp=later, at=timedelta(hours=1))
    return tmp_path


@pytest.mark.parametrize(
    ("flags", "names"),
    [
        ((), ["nightly", "nightly", "weekly"]),
        (("--failed",), ["nightly"]),
        (("--name", "weekly"), ["weekly"]),
        (("--since", "2026-12-01T01:30:00+00:00"), ["nightly", "weekly"]),
        (("--since", "2026-12-01T01:30:00+00:00", "--name", "nightly"), ["nightly"]),
        (("--failed", "--name", "weekly"), []),
    ],
)
def test_runs_are_filtered_and_the_totals_count_those_shown(
    capsys: pytest.CaptureFixture[str], three: Path, flags: tuple[str, ...], names: list[str]
) -> None:
    code, out, err = inspect(capsys, three, *flags)

    assert (code, err) == (0, "")
    *runs, total = out.splitlines()
    assert [line.split()[0] for line in runs] == names
    assert total.startswith(f"total: {len(names)} run")


def test_filters_sum_up_runs_so_one_log_with_one_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], three: Path
) -> None:
    log = next(three.glob("weekly-*.jsonl"))

    code, out, err = inspect(capsys, log, "--failed")

    assert (code, out) == (2, "")
    assert err == "thirdshift: --failed, --since and --name sum up runs: give a folder or logs\n"


@pytest.mark.parametrize(
    ("said", "meant"),
    [
        ("2h", datetime(2026, 12, 1, 10, 0, tzinfo=UTC)),
        ("90m", datetime(2026, 12, 1, 10, 30, tzinfo=UTC)),
        ("2026-11-30", datetime(2026, 11, 30, tzinfo=UTC)),
        ("2026-11-30T08:15", datetime(2026, 11, 30, 8, 15, tzinfo=UTC)),
        ("2026-11-30T08:15:00+01:00", datetime(2026, 11, 30, 7, 15, tzinfo=UTC)),
        ("08:15", datetime(2026, 12, 1, 8, 15, tzinfo=UTC)),
    ],
)
def test_since_takes_a_date_a_time_or_a_duration_back_from_now(said: str, meant: datetime) -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

    assert moment(said, now=now) == meant


def test_since_that_is_no_moment_says_what_it_takes() -> None:
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        moment("yesterday")

    assert "2026-12-01T03:00" in str(refused.value)
    assert "2h" in str(refused.value)


def test_a_continuation_the_cli_did_not_know_then_the_work_done_again_ends_ok(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lost = SessionFailed(LOST)
    missing = ResumeTargetMissing("claude: No conversation found with session ID: s1")
    session(tmp_path, "fix", failure=lost)
    session(tmp_path, "fix-continued", failure=missing, at=timedelta(seconds=30))
    session(tmp_path, "fix-retry", at=timedelta(seconds=31))

    _, out, _ = inspect(capsys, tmp_path)

    assert "3 sessions, ok," in out
