"""Sessions.within with the real adapter: skills (hidden from git, removed at the end),
progress, and the last log."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from repos import git, new_repo
from toy import Toy, install_toy

from thirdshift import Choice, Logs, Sessions, ThirdshiftError
from thirdshift._skills import copy_skills


@pytest.fixture(autouse=True)
def toy_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_toy(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = new_repo(tmp_path / "repo")
    git(
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "0",
        cwd=repo,
    )
    return repo


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    for name in ("review", "ship-it"):
        (tmp_path / "skills" / name).mkdir(parents=True)
        (tmp_path / "skills" / name / "SKILL.md").write_text(f"# {name}\n")
    (tmp_path / "skills" / ".not-a-skill").mkdir()  # a hidden folder or a file is none
    (tmp_path / "skills" / "README.md").write_text("# our skills\n")
    return tmp_path / "skills"


def status(cwd: Path) -> str:
    return git("status", "--porcelain", cwd=cwd)


def ignored(path: str, cwd: Path) -> bool:
    found = subprocess.run(["git", "check-ignore", "-q", path], cwd=cwd, check=False)
    assert found.returncode in (0, 1), found
    return found.returncode == 0


def within(tmp_path: Path, worktree: Path, skills: Path, toy: Toy | None = None) -> Any:
    logs = Logs(tmp_path / "logs", worktree.name)
    toy = toy if toy is not None else Toy(["out:FINAL:ok"])
    return Sessions.within(logs, worktree, Choice(toy), skills=skills, progress=list[str]().append)


def test_skills_are_copies_hidden_from_git_status_while_within_lasts(
    repo: Path, skills: Path, tmp_path: Path
) -> None:
    worktree = tmp_path / "wt"
    git("worktree", "add", "-q", str(worktree), cwd=repo)
    exclude = repo / ".git" / "info" / "exclude"
    before = exclude.read_bytes()

    for _ in range(2):
        with within(tmp_path, worktree, skills) as s:
            s.run("implement", "go")
            for name in ("review", "ship-it"):
                copy = worktree / ".toy" / "skills" / name
                assert not copy.is_symlink()
                assert (copy / "SKILL.md").read_text() == f"# {name}\n"
            assert sorted(path.name for path in (worktree / ".toy" / "skills").iterdir()) == [
                "review",
                "ship-it",
            ]
            assert status(worktree) == ""

        assert not (worktree / ".toy").exists()  # the copies and the folders made for them
        assert status(worktree) == ""
    assert exclude.read_bytes() == before  # the shared exclude is never written


def test_once_within_ended_and_the_worktree_is_gone_the_users_own_skill_is_seen(
    repo: Path, skills: Path, tmp_path: Path
) -> None:
    exclude = repo / ".git" / "info" / "exclude"
    exclude.write_text("# mine\n/build\n/.toy/skills/mine\n")
    worktree = tmp_path / "wt"
    git("worktree", "add", "-q", str(worktree), cwd=repo)
    with within(tmp_path, worktree, skills) as s:
        s.run("implement", "go")
    git("worktree", "remove", str(worktree), cwd=repo)  # no --force: nothing was left

    own = repo / ".toy" / "skills" / "review"
    own.mkdir(parents=True)
    (own / "SKILL.md").write_text("# my own review\n")
    assert not ignored(".toy/skills/review/SKILL.md", cwd=repo)
    git("add", ".toy/skills/review", cwd=repo)
    assert status(repo) == "A  .toy/skills/review/SKILL.md\n"
    assert exclude.read_text() == "# mine\n/build\n/.toy/skills/mine\n"


def test_one_worktrees_within_ending_leaves_anothers_copies_hidden(
    repo: Path, skills: Path, tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for worktree in (first, second):
        git("worktree", "add", "-q", str(worktree), cwd=repo)
    own = repo / ".toy" / "skills" / "review"

    with within(tmp_path, second, skills):
        with within(tmp_path, first, skills):
            assert status(first) == status(second) == ""
            # A session elsewhere hides nothing of the user's in the main worktree.
            own.mkdir(parents=True)
            (own / "SKILL.md").write_text("# my own review\n")
            assert status(repo) == "?? .toy/\n"
        assert not (first / ".toy").exists()
        assert (second / ".toy" / "skills" / "review" / "SKILL.md").read_text() == "# review\n"
        assert status(second) == ""
        assert ignored(".toy/skills/review/SKILL.md", cwd=second)
    assert not (second / ".toy").exists()


def test_concurrent_sessions_in_worktrees_of_one_repository_each_hide_their_own_copies(
    repo: Path, skills: Path, tmp_path: Path
) -> None:
    # The worktrees are made one by one: git itself does not take concurrent `worktree add`s.
    worktrees = [tmp_path / f"wt{index}" for index in range(6)]
    for worktree in worktrees:
        git("worktree", "add", "-q", str(worktree), cwd=repo)
    statuses: dict[int, str] = {}
    errors: list[BaseException] = []
    inside = threading.Barrier(6)

    def one(index: int) -> None:
        try:
            toy = Toy([f"out:FINAL:{index}"], skills_dir=f".toy{index}/skills")
            with within(tmp_path, worktrees[index], skills, toy):
                inside.wait(timeout=60)
                statuses[index] = status(worktrees[index])
                inside.wait(timeout=60)
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert statuses == dict.fromkeys(range(6), "")
    assert [path.name for worktree in worktrees for path in worktree.iterdir()] == [".git"] * 6


@pytest.mark.parametrize("ending", ["error", "interrupt"])
def test_the_copies_are_removed_when_within_ends_on_an_error_or_an_interrupt(
    repo: Path, skills: Path, tmp_path: Path, ending: str
) -> None:
    raised: type[BaseException] = ThirdshiftError if ending == "error" else KeyboardInterrupt

    with pytest.raises(raised), within(tmp_path, repo, skills, Toy(["exit:5"])) as s:
        assert (repo / ".toy" / "skills" / "review").is_dir()
        if ending == "error":
            s.run("implement", "go")  # the toy exits 5
        raise KeyboardInterrupt

    assert not (repo / ".toy").exists()
    assert status(repo) == ""


def test_copies_a_killed_orchestrator_left_stay_hidden_and_go_with_the_next_within(
    repo: Path, skills: Path, tmp_path: Path
) -> None:
    # What a within killed by SIGKILL leaves: the copies, and nothing outside the worktree.
    worktree = tmp_path / "wt"
    git("worktree", "add", "-q", str(worktree), cwd=repo)
    copy_skills(skills, worktree, ".toy/skills")
    assert status(worktree) == ""
    assert not ignored(".toy/skills/review/SKILL.md", cwd=repo)

    with within(tmp_path, worktree, skills):  # replaces the leftover copies, as its own
        assert (worktree / ".toy" / "skills" / "review" / "SKILL.md").read_text() == "# review\n"
    # The folders it found are kept: empty, which git shows no more than their absence.
    assert list((worktree / ".toy" / "skills").iterdir()) == []

    copy_skills(skills, worktree, ".toy/skills")
    git("worktree", "remove", str(worktree), cwd=repo)  # the leftovers go with the worktree
    assert status(repo) == ""


def test_the_skill_names_reach_the_invocation(repo: Path, skills: Path, tmp_path: Path) -> None:
    seen: list[tuple[str, ...]] = []

    class Recording(Toy):
        def invocation(self, choice, resume, prompt, skills=()):  # type: ignore[no-untyped-def]
            seen.append(tuple(skills))
            return super().invocation(choice, resume, prompt, skills)

    logs = Logs(tmp_path / "logs", "repo")
    with Sessions.within(
        logs, repo, Choice(Recording(["out:x"])), skills=skills, progress=list[str]().append
    ) as s:
        s.run("implement", "go")

    assert seen == [("review", "ship-it")]


def test_a_skill_name_that_is_not_plain_is_refused(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "skills" / "bad name").mkdir(parents=True)
    (tmp_path / "skills" / "bad name" / "SKILL.md").write_text("x")

    with (
        pytest.raises(ThirdshiftError, match="skill name 'bad name' is not a plain name"),
        Sessions.within(Logs(tmp_path, "r"), repo, Choice(Toy()), skills=tmp_path / "skills"),
    ):
        pass


def test_progress_goes_to_stderr_with_the_time_by_default(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Sessions.within(Logs(tmp_path / "logs", "repo"), repo, Choice(Toy(["out:hi"]))) as s:
        s.run("implement", "go")

    lines = capsys.readouterr().err.splitlines()
    assert re.fullmatch(
        r"thirdshift: \d\d:\d\d:\d\d \[repo\] logging the session to .*-implement\.jsonl",
        lines[0],
    )
    assert re.fullmatch(r"thirdshift: \d\d:\d\d:\d\d \[repo\] implement: line hi", lines[1])
    assert re.fullmatch(
        r"thirdshift: \d\d:\d\d:\d\d \[repo\] implement: session ended after 0s", lines[2]
    )


def test_the_last_log_is_dropped_when_it_was_never_created(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file where the log folder should be")

    with (
        pytest.raises(ThirdshiftError, match="is not a folder"),
        Sessions.within(
            Logs(tmp_path / "taken", "repo"), repo, Choice(Toy()), progress=list[str]().append
        ) as s,
    ):
        s.run("implement", "go")

    assert s.last_log is None


def test_the_last_log_is_kept_when_the_session_failed_after_creating_it(
    repo: Path, tmp_path: Path
) -> None:
    with (
        pytest.raises(ThirdshiftError, match="toy exited 5"),
        Sessions.within(
            Logs(tmp_path / "logs", "repo"),
            repo,
            Choice(Toy(["exit:5"])),
            progress=list[str]().append,
        ) as s,
    ):
        s.run("implement", "go")

    assert s.last_log is not None
    assert s.last_log.exists()
