"""Reading Qwen Code's background-shell status files: what it cancelled, as hostile input."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from thirdshift.harness import qwen
from thirdshift.harness._builtin.qwen_shells import MAX_FILES, MAX_STATUS_BYTES, cancelled_shells

SESSION = "c731bf94-e9ac-4802-8e58-06ee9c6f962d"


def project_of(cwd: Path) -> str:
    return hashlib.sha256(str(cwd).encode()).hexdigest()


def shells_folder(home: Path, cwd: Path, session: str = SESSION) -> Path:
    folder = home / ".qwen" / "tmp" / project_of(cwd) / "background-shells" / session
    folder.mkdir(parents=True)
    return folder


def write_status(folder: Path, name: str, status: str, command: str = "sleep 300") -> Path:
    path = folder / name
    path.write_text(json.dumps({"id": name, "command": command, "status": status}))
    return path


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


def test_each_cancelled_shell_is_named_by_its_command(tmp_path: Path, cwd: Path) -> None:
    folder = shells_folder(tmp_path, cwd)
    write_status(folder, "shell-bg_1.status", "cancelled", "npm run dev")
    write_status(folder, "shell-bg_2.status.json", "cancelled", "sh long-work.sh")
    write_status(folder, "shell-bg_3.status", "completed")
    write_status(folder, "shell-bg_4.status", "running")
    (folder / "shell-bg_1.output").write_text("not a status file")

    assert cancelled_shells(tmp_path, cwd, SESSION) == {
        "shell-bg_1.status": "npm run dev",
        "shell-bg_2.status.json": "sh long-work.sh",
    }


def test_the_harness_reads_them_under_the_clis_home(tmp_path: Path, cwd: Path) -> None:
    write_status(shells_folder(tmp_path, cwd), "shell-bg_1.status", "cancelled")
    read = qwen().harness.work_killed_at_exit
    assert read(cwd, {"HOME": str(tmp_path)}, SESSION) == {"shell-bg_1.status": "sleep 300"}
    assert read(cwd, {"HOME": str(tmp_path / "elsewhere")}, SESSION) == {}


def test_another_sessions_shells_do_not_count(tmp_path: Path, cwd: Path) -> None:
    write_status(shells_folder(tmp_path, cwd, "other-session"), "shell-bg_1.status", "cancelled")
    assert cancelled_shells(tmp_path, cwd, SESSION) == {}


def test_a_project_folder_of_another_digest_is_found_by_the_session(
    tmp_path: Path, cwd: Path
) -> None:
    folder = tmp_path / ".qwen" / "tmp" / ("ab" * 32) / "background-shells" / SESSION
    folder.mkdir(parents=True)
    write_status(folder, "shell-bg_1.status", "cancelled")
    assert cancelled_shells(tmp_path, cwd, SESSION) == {"shell-bg_1.status": "sleep 300"}


@pytest.mark.parametrize("session", ["../../..", "a/b", ".", "..", "", "-r", "x" * 200])
def test_a_hostile_session_id_names_no_folder(tmp_path: Path, cwd: Path, session: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    write_status(outside, "shell-bg_1.status", "cancelled")
    assert cancelled_shells(tmp_path, cwd, session) == {}


def test_no_symlink_below_home_is_followed(tmp_path: Path, cwd: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write_status(elsewhere, "shell-bg_1.status", "cancelled")
    home = tmp_path / "home"
    folder = shells_folder(home, cwd)
    folder.rmdir()
    folder.symlink_to(elsewhere)  # the session's folder is a link
    assert cancelled_shells(home, cwd, SESSION) == {}

    folder.unlink()
    folder.mkdir()
    (folder / "shell-bg_2.status").symlink_to(elsewhere / "shell-bg_1.status")  # a file link
    assert cancelled_shells(home, cwd, SESSION) == {}

    other_home = tmp_path / "other-home"
    (other_home / ".qwen").mkdir(parents=True)
    (other_home / ".qwen" / "tmp").symlink_to(home / ".qwen" / "tmp")  # a link higher up
    assert cancelled_shells(other_home, cwd, SESSION) == {}


def test_a_fifo_an_oversized_file_and_garbage_are_skipped(tmp_path: Path, cwd: Path) -> None:
    folder = shells_folder(tmp_path, cwd)
    os.mkfifo(folder / "shell-fifo.status")  # would block a plain open and read
    big = {"status": "cancelled", "command": "x" * MAX_STATUS_BYTES}
    (folder / "shell-big.status").write_text(json.dumps(big))
    (folder / "shell-junk.status").write_bytes(b"\xff{[" * 10)
    (folder / "shell-deep.status").write_text("[" * 100_000 + "]" * 100_000)
    (folder / "shell-list.status").write_text("[1, 2]")
    write_status(folder, "shell-empty.status", "cancelled", "")
    (folder / "shell-dir.status").mkdir()
    write_status(folder, "shell-ok.status", "cancelled")

    assert cancelled_shells(tmp_path, cwd, SESSION) == {"shell-ok.status": "sleep 300"}


def test_a_hostile_command_is_escaped_and_shortened(tmp_path: Path, cwd: Path) -> None:
    folder = shells_folder(tmp_path, cwd)
    write_status(folder, "shell-a.status", "cancelled", "sleep 1\n\x1b[2J" + "y" * 1000)
    (described,) = cancelled_shells(tmp_path, cwd, SESSION).values()
    assert described.startswith("sleep 1\\x0a\\x1b[2Jyyy")
    assert described.endswith("…")
    assert len(described) == 501


def test_only_so_many_files_are_looked_at(tmp_path: Path, cwd: Path) -> None:
    folder = shells_folder(tmp_path, cwd)
    for n in range(MAX_FILES + 50):
        write_status(folder, f"shell-{n}.status", "cancelled")
    assert len(cancelled_shells(tmp_path, cwd, SESSION)) <= MAX_FILES
