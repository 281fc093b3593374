"""Security, end to end: prompts off argv, private logs, skills copied only where they belong.

Also part of it, elsewhere: hostile session ids and kinds (e2e/test_hostile.py), and the guard
that no subprocess call uses a shell (tests/test_source_guards.py).
"""

from __future__ import annotations

import os
import stat
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from sessionkit import (
    CHOICES,
    IDS,
    MARK,
    InThread,
    assert_logged_exactly,
    cmdline,
    environ,
    every_pid,
    log_of,
    processes_with_env,
    still_running,
)

from pytest_thirdshift import FakeCLIs
from thirdshift import (
    Choice,
    Interrupted,
    Logs,
    Sessions,
    ThirdshiftError,
    claude,
    interrupts,
)
from thirdshift._logs import command_stamp
from thirdshift._machine.supervised import SUPERVISOR
from thirdshift.testing import fakecli as fake
from thirdshift.testing import steps


def sidecar_of(logs_dir: Path, kind: str) -> Path:
    return logs_dir / f"repo-{command_stamp()}-{kind}.stderr"


def record_of(logs_dir: Path, kind: str) -> Path:
    return logs_dir / f"repo-{command_stamp()}-{kind}.record.json"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


# Prompts


@pytest.mark.parametrize("choice", CHOICES, ids=IDS)
def test_the_prompt_is_in_no_argv_and_no_environment_of_any_process(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, choice: Choice, no_process_left: str
) -> None:
    secret = f"SECRET-{uuid.uuid4().hex}"
    prompt = f"--dangerously-skip-permissions\n{secret}: fix it"  # a flag, were it in argv
    cli = fake_cli_on_path.harness(choice.harness.name)
    cli.script(steps.background("sleep 300"), steps.hang())

    def implement() -> None:
        with Sessions.within(
            Logs(tmp_path / "logs", "repo"), tmp_path, choice, progress=list[str]().append
        ) as sessions:
            sessions.run("implement", prompt)

    session = InThread(implement)
    session.start()
    try:
        call = cli.wait_for_call(0, hanging=True)
        # The fake, its supervisor (its parent, running supervisor.py), the background work.
        # Its environment reads empty while it execs (bash into sleep, say): look again until
        # every one shows its mark, within a deadline.
        expected = {call.pid, call.ppid, *call.started_pids}
        deadline = time.monotonic() + 10
        processes = processes_with_env(MARK, no_process_left)
        while not expected <= set(processes) and time.monotonic() < deadline:
            time.sleep(0.05)
            processes = processes_with_env(MARK, no_process_left)
        assert expected <= set(processes)
        assert str(SUPERVISOR).encode() in cmdline(call.ppid)
        for pid in processes:
            assert secret.encode() not in b"\0".join(cmdline(pid)), f"prompt in argv of {pid}"
            assert secret.encode() not in environ(pid), f"prompt in environment of {pid}"
        assert not any(secret in arg for arg in call.argv)
    finally:
        interrupts.request()
        session.join(30)
        interrupts.clear()

    assert isinstance(session.error, Interrupted)
    (call,) = cli.calls
    assert call.stdin == prompt  # it went to stdin, whole
    assert still_running(every_pid(call)) == []


# Logs


def test_logs_and_sidecars_are_0600_in_a_0700_folder_whatever_the_umask(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.background("sleep 300"), fake.stderr("a secret on stderr"))
    fake_cli_on_path.claude.script(steps.say("done"))
    logs_dir = tmp_path / "new" / "logs"
    previous = os.umask(0)
    try:
        with Sessions.within(
            Logs(logs_dir, "repo"), tmp_path, claude(), progress=list[str]().append
        ) as sessions:
            sessions.run("implement", "go")
    finally:
        os.umask(previous)

    first, resume = fake_cli_on_path.claude.calls
    assert mode(logs_dir) == 0o700
    for kind, call in (("implement", first), ("implement-resume", resume)):
        assert mode(log_of(logs_dir, kind)) == 0o600
        assert mode(sidecar_of(logs_dir, kind)) == 0o600
        assert mode(record_of(logs_dir, kind)) == 0o600
        assert_logged_exactly(log_of(logs_dir, kind), call)
    assert sidecar_of(logs_dir, "implement").read_text() == "a secret on stderr\n"
    assert sorted(path.name for path in logs_dir.iterdir()) == sorted(
        path.name
        for kind in ("implement", "implement-resume")
        for path in (log_of(logs_dir, kind), sidecar_of(logs_dir, kind), record_of(logs_dir, kind))
    )


def test_a_log_left_by_an_earlier_run_is_kept_and_the_session_logs_beside_it(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    fake_cli_on_path.claude.script(steps.say("done"))
    logs_dir = tmp_path / "logs"
    logs_dir.mkdir(mode=0o700)
    for path in (log_of(logs_dir, "implement"), sidecar_of(logs_dir, "implement")):
        path.write_text("an older run's stream, longer than this one's")
        path.chmod(0o644)

    with Sessions.within(
        Logs(logs_dir, "repo"), tmp_path, claude(), progress=list[str]().append
    ) as s:
        s.run("implement", "go")

    (call,) = fake_cli_on_path.claude.calls
    for path in (log_of(logs_dir, "implement"), sidecar_of(logs_dir, "implement")):
        assert path.read_text() == "an older run's stream, longer than this one's"
    assert s.last_log == log_of(logs_dir, "implement-2")
    assert mode(s.last_log) == 0o600
    assert mode(sidecar_of(logs_dir, "implement-2")) == 0o600
    assert_logged_exactly(s.last_log, call)


@pytest.mark.parametrize("which", ["log", "sidecar"])
def test_a_symlink_planted_where_a_log_goes_is_not_followed(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, which: str
) -> None:
    fake_cli_on_path.claude.script(steps.say("done"))
    logs_dir = tmp_path / "logs"
    logs_dir.mkdir(mode=0o700)
    precious = tmp_path / "precious"
    precious.write_text("not yours\n")
    precious.chmod(0o644)
    planted = log_of(logs_dir, "implement") if which == "log" else sidecar_of(logs_dir, "implement")
    planted.symlink_to(precious)

    with Sessions.within(
        Logs(logs_dir, "repo"), tmp_path, claude(), progress=list[str]().append
    ) as s:
        s.run("implement", "go")

    assert precious.read_text() == "not yours\n"
    assert mode(precious) == 0o644
    assert planted.is_symlink()
    (call,) = fake_cli_on_path.claude.calls
    assert s.last_log == log_of(logs_dir, "implement-2")
    assert_logged_exactly(s.last_log, call)


# Skills


def make_skill(folder: Path, name: str) -> Path:
    (folder / name).mkdir(parents=True)
    (folder / name / "SKILL.md").write_text(f"# {name}\n")
    return folder / name


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def test_a_skill_that_is_a_symlink_out_of_the_skills_folder_is_copied_from_its_target(
    fake_cli_on_path: FakeCLIs, tmp_path: Path
) -> None:
    elsewhere = make_skill(tmp_path / "shared", "review")
    skills = tmp_path / "skills"
    skills.mkdir()
    (skills / "review").symlink_to(elsewhere)
    worktree = tmp_path / "repo"
    worktree.mkdir()
    git("init", "-q", cwd=worktree)
    fake_cli_on_path.claude.script(steps.load_skill("review"), steps.say("reviewed"))

    with Sessions.within(
        Logs(tmp_path / "logs", "repo"),
        worktree,
        claude(),
        skills=skills,
        progress=list[str]().append,
    ) as sessions:
        assert sessions.run_to_final_message("implement", "/review") == "reviewed"
        copy = worktree / ".claude" / "skills" / "review"
        assert not copy.is_symlink()  # an agent's edit must not reach the operator's folder
        assert (copy / "SKILL.md").read_text() == "# review\n"

    (call,) = fake_cli_on_path.claude.calls
    results = [
        block
        for event in call.events
        if event["type"] == "user"
        for block in event["message"]["content"]
    ]
    assert [(r["content"], r.get("is_error")) for r in results] == [
        ("Launching skill: review", None)
    ]
    assert git("status", "--porcelain", cwd=worktree) == ""


@pytest.mark.parametrize(
    "name",
    ["--dangerously-skip-permissions", "-rf", ".hidden", "..x", "x\ny", "a b", "ünïcode", "x;y"],
)
def test_a_skill_folder_whose_name_is_not_plain_is_refused_before_anything_is_linked(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, name: str
) -> None:
    # Skill names are folder names, so "../x" or "a/b" cannot occur; these are what can.
    skills = tmp_path / "skills"
    make_skill(skills, "fine")
    make_skill(skills, name)
    worktree = tmp_path / "repo"
    worktree.mkdir()
    git("init", "-q", cwd=worktree)

    with (
        pytest.raises(ThirdshiftError) as raised,
        Sessions.within(
            Logs(tmp_path / "logs", "repo"),
            worktree,
            claude(),
            skills=skills,
            progress=list[str]().append,
        ),
    ):
        pass

    assert str(raised.value) == f"skill name {name!r} is not a plain name"
    assert not (worktree / ".claude").exists()  # not even the plain one was linked
    assert fake_cli_on_path.claude.calls == []


@pytest.mark.parametrize("through", [".claude", ".claude/skills"])
def test_a_skills_folder_in_the_worktree_that_leads_outside_it_is_refused(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, through: str
) -> None:
    # An agent can leave such a symlink in its worktree for the next session to follow.
    skills = tmp_path / "skills"
    make_skill(skills, "ship")
    outside = tmp_path / "outside"
    precious = outside / "skills" / "ship" / "precious.txt"
    precious.parent.mkdir(parents=True)
    precious.write_text("keep me\n")
    worktree = tmp_path / "repo"
    (worktree / ".claude").parent.mkdir(parents=True, exist_ok=True)
    if through == ".claude":
        (worktree / ".claude").symlink_to(outside)
    else:
        (worktree / ".claude").mkdir()
        (worktree / ".claude" / "skills").symlink_to(outside / "skills")

    with (
        pytest.raises(ThirdshiftError) as raised,
        Sessions.within(
            Logs(tmp_path / "logs", "repo"),
            worktree,
            claude(),
            skills=skills,
            progress=list[str]().append,
        ),
    ):
        pass

    assert str(raised.value) == (
        f"refusing to copy skills through {worktree / through}: it is a symlink"
    )
    assert precious.read_text() == "keep me\n"
    assert not (outside / "skills" / "ship").is_symlink()
    assert fake_cli_on_path.claude.calls == []
