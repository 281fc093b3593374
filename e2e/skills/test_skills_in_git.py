"""Skills copies as git sees them: out of `git status` in the worktree, in a linked worktree, in a
worktree below the top folder and in a submodule, by each copy's own .gitignore.
"""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from thirdshift._skills import (
    IGNORE_ALL,
    MARKER,
    copy_skills,
)

SKILLS_DIR = ".claude/skills"


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git("init", "-q", cwd=path)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "0",
        cwd=path)  # fmt: skip
    return path


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    folder = tmp_path / "skills"
    (folder / "review" / "scripts").mkdir(parents=True)
    (folder / "review" / "SKILL.md").write_text("# review\n")
    (folder / "review" / "scripts" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (folder / "review" / "scripts" / "run.sh").chmod(0o755)
    (folder / "ship").mkdir()
    (folder / "ship" / "SKILL.md").write_text("# ship\n")
    return folder


def linked_worktree(repo: Path, path: Path) -> Path:
    git("worktree", "add", "-q", str(path), cwd=repo)
    return path


def ignored(path: str, cwd: Path) -> bool:
    found = subprocess.run(["git", "check-ignore", "-q", path], cwd=cwd, check=False)
    assert found.returncode in (0, 1), found
    return found.returncode == 0


def test_each_skill_is_a_read_only_copy_that_leaves_git_status_clean(
    tmp_path: Path, skills: Path
) -> None:
    repo = make_repo(tmp_path / "repo")

    assert copy_skills(skills, repo, SKILLS_DIR) == ["review", "ship"]

    copy = repo / SKILLS_DIR / "review"
    assert not copy.is_symlink()
    assert copy.is_dir()
    assert (copy / "SKILL.md").read_text() == "# review\n"
    assert (copy / "scripts" / "run.sh").read_text() == "#!/bin/sh\necho hi\n"
    assert stat.S_IMODE((copy / "SKILL.md").stat().st_mode) == 0o444
    assert stat.S_IMODE((copy / "scripts" / "run.sh").stat().st_mode) == 0o555
    assert (copy / MARKER).read_text().startswith(f"Copied by thirdshift from {skills / 'review'}")
    assert (copy / ".gitignore").read_bytes() == IGNORE_ALL
    assert git("status", "--porcelain", "--ignored=no", cwd=repo) == ""


def test_a_linked_worktrees_copies_are_hidden_there_and_nowhere_else(
    tmp_path: Path, skills: Path
) -> None:
    repo = make_repo(tmp_path / "repo")
    exclude = repo / ".git" / "info" / "exclude"
    before = exclude.read_bytes()
    worktree = linked_worktree(repo, tmp_path / "wt")

    copy_skills(skills, worktree, SKILLS_DIR)

    assert git("status", "--porcelain", cwd=worktree) == ""
    assert ignored(".claude/skills/ship/SKILL.md", cwd=worktree)
    assert not ignored(".claude/skills/ship/SKILL.md", cwd=repo)
    assert exclude.read_bytes() == before


def test_a_worktree_below_the_top_folder_hides_the_copies_where_they_are(
    tmp_path: Path, skills: Path
) -> None:
    repo = make_repo(tmp_path / "repo")
    below = repo / "pkg [1]"
    below.mkdir()

    copy_skills(skills, below, SKILLS_DIR)

    assert git("status", "--porcelain", cwd=repo) == ""
    assert not ignored(".claude/skills/ship/SKILL.md", cwd=repo)


def test_a_submodules_copies_are_hidden_in_it_and_in_the_superproject(
    tmp_path: Path, skills: Path
) -> None:
    library = make_repo(tmp_path / "library")
    superproject = make_repo(tmp_path / "super")
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "lib",
        cwd=superproject)  # fmt: skip
    submodule = superproject / "lib"

    copy_skills(skills, submodule, SKILLS_DIR)

    assert git("status", "--porcelain", cwd=submodule) == ""
    assert git("status", "--porcelain", "--ignore-submodules=none", cwd=superproject) == (
        "A  .gitmodules\nA  lib\n"
    )


def test_a_skills_own_gitignore_is_kept_and_ended_with_ignoring_everything(
    tmp_path: Path, skills: Path
) -> None:
    (skills / "review" / ".gitignore").write_text("*.log\n!SKILL.md")  # no final newline
    repo = make_repo(tmp_path / "repo")

    copy_skills(skills, repo, SKILLS_DIR)

    copy = repo / SKILLS_DIR
    assert (copy / "review" / ".gitignore").read_bytes() == b"*.log\n!SKILL.md\n" + IGNORE_ALL
    assert (copy / "ship" / ".gitignore").read_bytes() == IGNORE_ALL
    assert stat.S_IMODE((copy / "ship" / ".gitignore").stat().st_mode) == 0o444
    assert (skills / "review" / ".gitignore").read_text() == "*.log\n!SKILL.md"
    assert git("status", "--porcelain", "--ignored=no", cwd=repo) == ""
