"""Sessions.within with the real adapter: skills, progress, and the last log."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from pathlib import Path

import pytest
from toy import Toy, install_toy

from thirdshift import Choice, Logs, Sessions, ThirdshiftError


@pytest.fixture(autouse=True)
def toy_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_toy(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
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


def test_skills_are_copied_and_excluded_once_in_the_shared_exclude(
    repo: Path, skills: Path, tmp_path: Path
) -> None:
    worktree = tmp_path / "wt"
    git("worktree", "add", "-q", str(worktree), cwd=repo)
    toy = Toy(["out:FINAL:ok"])
    logs = Logs(tmp_path / "logs", "wt")

    for _ in range(2):
        with Sessions.within(
            logs, worktree, Choice(toy), skills=skills, progress=list[str]().append
        ) as s:
            s.run("implement", "go")

    for name in ("review", "ship-it"):
        copy = worktree / ".toy" / "skills" / name
        assert not copy.is_symlink()
        assert (copy / "SKILL.md").read_text() == f"# {name}\n"
    assert sorted(path.name for path in (worktree / ".toy" / "skills").iterdir()) == [
        "review",
        "ship-it",
    ]
    exclude = (repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert exclude.count("/.toy/skills/review") == 1
    assert exclude.count("/.toy/skills/ship-it") == 1
    assert git("status", "--porcelain", cwd=worktree) == ""


def test_concurrent_sessions_do_not_corrupt_the_exclude(
    repo: Path, skills: Path, tmp_path: Path
) -> None:
    # The worktrees are made one by one: git itself does not take concurrent `worktree add`s.
    worktrees = [tmp_path / f"wt{index}" for index in range(6)]
    for worktree in worktrees:
        git("worktree", "add", "-q", str(worktree), cwd=repo)
    errors: list[BaseException] = []

    def one(index: int) -> None:
        try:
            toy = Toy([f"out:FINAL:{index}"], skills_dir=f".toy{index}/skills")
            logs = Logs(tmp_path / "logs", f"wt{index}")
            with Sessions.within(
                logs, worktrees[index], Choice(toy), skills=skills, progress=list[str]().append
            ):
                pass
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    exclude = (repo / ".git" / "info" / "exclude").read_text().splitlines()
    for index in range(6):
        for name in ("review", "ship-it"):
            assert exclude.count(f"/.toy{index}/skills/{name}") == 1


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
