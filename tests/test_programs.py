"""find_program: absolute PATH entries only, and an error that says why a program is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from thirdshift._programs import find_program
from thirdshift.errors import CLINotFound


def _program(folder: Path, name: str = "tool", mode: int = 0o755) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(mode)
    return path


def test_an_absolute_entry_gives_an_absolute_path(tmp_path: Path) -> None:
    path = _program(tmp_path / "bin")
    assert find_program("tool", f"{tmp_path / 'none'}{os.pathsep}{tmp_path / 'bin'}") == str(path)


@pytest.mark.parametrize("entry", ["", ".", "bin"])
def test_relative_entries_are_skipped_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    monkeypatch.chdir(tmp_path)
    _program(tmp_path / entry if entry else tmp_path)
    with pytest.raises(CLINotFound) as raised:
        find_program("tool", entry)
    assert raised.value.program == "tool"
    assert str(raised.value) == (
        f"tool is not on PATH: only relative PATH entries hold it ({entry or '(empty)'}), and "
        "those are skipped, as they would resolve inside the worktree"
    )


def test_a_relative_entry_does_not_shadow_a_later_absolute_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _program(tmp_path)
    real = _program(tmp_path / "bin")
    assert find_program("tool", f".{os.pathsep}{tmp_path / 'bin'}") == str(real)


def test_a_file_that_is_not_executable_is_named(tmp_path: Path) -> None:
    path = _program(tmp_path / "bin", mode=0o644)
    with pytest.raises(CLINotFound, match=f"tool on PATH at {path} is not executable"):
        find_program("tool", str(tmp_path / "bin"))


def test_missing_everywhere(tmp_path: Path) -> None:
    with pytest.raises(CLINotFound, match="tool is not on PATH: install it"):
        find_program("tool", str(tmp_path))
