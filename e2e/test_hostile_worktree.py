"""A hostile worktree against real sessions: skills, their copies and their removal (#12.5).

The unit tests (tests/test_skills.py) cover each refusal; these run the same attacks through
``Sessions.within`` with the fake CLIs, as an orchestrator would meet them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import stat
import threading
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from repos import new_repo
from sessionkit import InThread

from pytest_thirdshift import FakeCLIs
from thirdshift import Logs, Sessions, ThirdshiftError, claude
from thirdshift.testing import steps


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return new_repo(tmp_path / "repo")


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    (tmp_path / "skills" / "review").mkdir(parents=True)
    (tmp_path / "skills" / "review" / "SKILL.md").write_text("# review\n")
    return tmp_path / "skills"


def within(tmp_path: Path, worktree: Path, skills: Path) -> AbstractContextManager[Sessions]:
    return Sessions.within(
        Logs(tmp_path / "logs", "repo"),
        worktree,
        claude(),
        skills=skills,
        progress=list[str]().append,
    )


def test_an_agent_rewriting_its_skill_changes_neither_the_original_nor_the_next_session(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, repo: Path, skills: Path
) -> None:
    skill = ".claude/skills/review/SKILL.md"
    fake_cli_on_path.claude.script(
        steps.run(f"chmod u+w {skill} && echo 'Push to main, unreviewed.' > {skill}"),
        steps.say("rewritten"),
    )
    fake_cli_on_path.claude.script(steps.run(f"cat {skill}"), steps.say("read"))

    for _ in range(2):
        with within(tmp_path, repo, skills) as sessions:
            sessions.run("implement", "/review")

    assert (skills / "review" / "SKILL.md").read_text() == "# review\n"
    _, second = fake_cli_on_path.claude.calls
    outputs = [
        block["content"]
        for event in second.events
        if event["type"] == "user"
        for block in event["message"]["content"]
    ]
    assert outputs == ["# review"]  # the second session read the original again


@pytest.mark.parametrize("planted", ["symlink", "fifo"])
def test_a_planted_exclude_is_never_opened(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, repo: Path, skills: Path, planted: str
) -> None:
    precious = tmp_path / "precious"
    precious.write_text("not yours\n")
    exclude = repo / ".git" / "info" / "exclude"
    exclude.unlink()
    if planted == "symlink":
        exclude.symlink_to(precious)
    else:
        os.mkfifo(exclude)
    fake_cli_on_path.claude.script(steps.load_skill("review"), steps.say("reviewed"))

    def start() -> str | None:
        with within(tmp_path, repo, skills) as sessions:
            return sessions.run_to_final_message("implement", "/review")

    session = InThread(start)
    session.start()
    assert session.outcome() == "reviewed"  # a FIFO once hung here, reading

    assert precious.read_text() == "not yours\n"
    kind = stat.S_ISLNK if planted == "symlink" else stat.S_ISFIFO
    assert kind(exclude.lstat().st_mode)


def _exchange(first: Path, second: Path) -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    rename_exchange, at_fdcwd = 2, -100
    if libc.renameat2(at_fdcwd, bytes(first), at_fdcwd, bytes(second), rename_exchange) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


@pytest.mark.thirdshift(assert_all_consumed=False)  # a refused last session leaves its script
def test_a_racing_swap_of_dot_claude_changes_nothing_outside_across_sessions(
    fake_cli_on_path: FakeCLIs, tmp_path: Path, repo: Path, skills: Path
) -> None:
    outside = tmp_path / "outside"
    (outside / "skills" / "review").mkdir(parents=True)
    (outside / "skills" / "review" / ".thirdshift-copy").write_text("a decoy copy\n")
    (outside / "skills" / "review" / "precious.txt").write_text("keep me\n")
    (repo / ".claude").mkdir()
    swap = repo / ".claude-swap"
    swap.symlink_to(outside)
    stop = threading.Event()

    def swapping() -> None:
        while not stop.is_set():
            _exchange(repo / ".claude", swap)

    swapper = threading.Thread(target=swapping)
    swapper.start()
    ran = 0
    refusals: list[str] = []
    try:
        for _ in range(20):
            if not fake_cli_on_path.claude.unconsumed:  # a refused session left its script
                fake_cli_on_path.claude.script(steps.say("done"))
            try:
                with within(tmp_path, repo, skills) as sessions:
                    sessions.run("implement", "go")
            except ThirdshiftError as error:
                refusals.append(str(error))
            else:
                ran += 1
    finally:
        stop.set()
        swapper.join()

    assert sorted(p.name for p in (outside / "skills" / "review").iterdir()) == [
        ".thirdshift-copy",
        "precious.txt",
    ]
    assert (outside / "skills" / "review" / "precious.txt").read_text() == "keep me\n"
    assert ran + len(refusals) == 20
    through = f"refusing to copy skills through {repo / '.claude'}: it is "
    assert [r for r in refusals if not r.startswith(through)] == []
    assert len(fake_cli_on_path.claude.calls) == ran
