"""Git repositories for the e2e tests that need a worktree git knows."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(*args: str, cwd: Path) -> str:
    """Run git in ``cwd``; its stdout (a failure raises)."""
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def new_repo(folder: Path) -> Path:
    """A fresh repository in ``folder`` (made here), with no commit yet."""
    folder.mkdir()
    git("init", "-q", cwd=folder)
    return folder
