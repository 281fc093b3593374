"""Session logs: made exclusively in a folder that is ours, never truncated or overwritten."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from thirdshift import Ended, Logs, Sessions, ThirdshiftError
from thirdshift._logs import (
    LogExists,
    command_stamp,
    create_log_files,
    create_private,
    record_path,
    sidecar_path,
)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    made = tmp_path / "logs"
    made.mkdir(mode=0o700)
    return made


def test_a_missing_folder_is_made_0700_and_the_file_0600(tmp_path: Path) -> None:
    log = tmp_path / "a" / "logs" / "x.jsonl"

    os.close(create_private(log))

    assert mode(log.parent) == 0o700
    assert mode(log) == 0o600


def test_an_existing_file_is_never_truncated_or_written(folder: Path) -> None:
    log = folder / "x.jsonl"
    log.write_text("an earlier run's stream\n")

    with pytest.raises(LogExists) as raised:
        create_private(log)

    assert raised.value.path == log
    assert log.read_text() == "an earlier run's stream\n"


def test_a_planted_symlink_is_never_followed(folder: Path, tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.write_text("not yours\n")
    precious.chmod(0o644)
    (folder / "x.jsonl").symlink_to(precious)

    with pytest.raises(LogExists):
        create_private(folder / "x.jsonl")

    assert precious.read_text() == "not yours\n"
    assert mode(precious) == 0o644


@pytest.mark.parametrize("loose", [0o770, 0o707, 0o722, 0o1777])
def test_a_folder_that_group_or_others_may_write_to_is_refused(folder: Path, loose: int) -> None:
    folder.chmod(loose)

    with pytest.raises(ThirdshiftError) as raised:
        create_private(folder / "x.jsonl")

    assert str(raised.value) == (
        f"refusing to write Session logs to {folder}: group or others may write to it "
        f"(mode {loose:04o}): chmod go-w {folder}"
    )
    assert list(folder.iterdir()) == []


def test_a_folder_others_may_only_read_is_used(folder: Path) -> None:
    folder.chmod(0o755)

    os.close(create_private(folder / "x.jsonl"))

    assert (folder / "x.jsonl").exists()


def test_a_folder_owned_by_another_user_is_refused(folder: Path) -> None:
    # As root, hand a folder to nobody; as anyone else, / is such a folder already.
    if os.geteuid() == 0:
        os.chown(folder, 65534, 65534)
        theirs, uid = folder, 65534
    else:
        theirs, uid = Path("/"), os.stat("/").st_uid

    with pytest.raises(ThirdshiftError) as raised:
        create_private(theirs / "x.jsonl")

    assert str(raised.value) == (
        f"refusing to write Session logs to {theirs}: it is owned by another user (uid {uid})"
    )
    assert not (theirs / "x.jsonl").exists()


# A symlink another user planted on the way to the logs folder (#26 L7)

THEIRS = 65534  # nobody: owns the planted symlinks (handing them over takes root)
needs_root = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="handing a symlink to another user takes root; "
    "e2e/test_containment_unprivileged.py runs the same as an unprivileged user",
)


@pytest.fixture
def sticky(tmp_path: Path) -> Path:
    """A folder every user may write to, as /tmp is."""
    made = tmp_path / "tmp"
    made.mkdir()
    made.chmod(0o1777)
    return made


@pytest.fixture
def private(tmp_path: Path) -> Path:
    """A folder of the user's own, which no one else may enter."""
    made = tmp_path / "private"
    made.mkdir(mode=0o700)
    return made


def planted(link: Path, target: Path, owner: int = THEIRS) -> Path:
    link.symlink_to(target)
    os.lchown(link, owner, owner)
    return link


@needs_root
def test_a_logs_folder_that_is_another_users_symlink_to_a_private_folder_is_refused(
    sticky: Path, private: Path
) -> None:
    logs = planted(sticky / "logs", private)

    with pytest.raises(ThirdshiftError) as raised:
        create_log_files(logs / "x.jsonl")

    assert str(raised.value) == (
        f"refusing to write Session logs to {logs}: {logs} is a symlink owned by another user "
        f"(uid {THEIRS})"
    )
    assert list(private.iterdir()) == []


@needs_root
def test_another_users_symlink_anywhere_on_the_way_is_refused_and_nothing_made(
    sticky: Path, private: Path
) -> None:
    planted(sticky / "shared", private)
    logs = sticky / "shared" / "night" / "logs"

    with pytest.raises(ThirdshiftError, match=r"shared is a symlink owned by another user"):
        create_log_files(logs / "x.jsonl")

    assert list(private.iterdir()) == []  # not even the folders on the way


def test_a_symlink_of_our_own_on_the_way_is_followed(sticky: Path, private: Path) -> None:
    link = planted(sticky / "logs", Path("..") / "private" / "logs", os.geteuid())

    for fd in create_log_files(link / "x.jsonl"):
        os.close(fd)

    assert sorted(path.name for path in (private / "logs").iterdir()) == [
        "x.jsonl",
        "x.record.json",
        "x.stderr",
    ]
    assert mode(private / "logs") == 0o700


@pytest.mark.parametrize("taken", [sidecar_path, record_path], ids=["sidecar", "record"])
def test_log_files_are_made_all_three_or_not_at_all(
    folder: Path, taken: Callable[[Path], Path]
) -> None:
    log = folder / "x.jsonl"
    taken(log).write_text("someone else's\n")

    with pytest.raises(LogExists):
        create_log_files(log)

    assert sorted(path.name for path in folder.iterdir()) == [taken(log).name]
    fds = create_log_files(folder / "y.jsonl")
    for fd in fds:
        os.close(fd)
    made = sorted(path.name for path in folder.iterdir() if path.name.startswith("y"))
    assert made == ["y.jsonl", "y.record.json", "y.stderr"]
    assert (folder / "y.record.json").read_bytes() == b""  # its name held till the end
    assert mode(folder / "y.record.json") == 0o600


class CreatingOutside:
    """An Outside that makes its log files as the real adapter does, then writes one line."""

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
        log_fd, stderr_fd = create_log_files(log)
        os.write(log_fd, f"{prompt}\n".encode())
        os.close(log_fd)
        os.close(stderr_fd)
        return Ended(session_id=None)

    def report(self, line: str) -> None:
        pass

    def wait(self, seconds: float) -> None:
        raise AssertionError("no API limit is hit here")

    def cancel(self) -> None:
        raise AssertionError("nothing is cancelled here")


def test_a_taken_name_moves_the_session_to_the_next_and_last_log_holds_it(
    folder: Path,
) -> None:
    logs = Logs(folder, "repo")
    logs.path("implement").write_text("kept\n")
    sidecar_path(logs.path("implement", 2)).write_text("kept too\n")
    sessions = Sessions(logs, CreatingOutside())

    sessions.run("implement", "mine")

    assert sessions.last_log == folder / f"repo-{command_stamp()}-implement-3.jsonl"
    assert sessions.last_log.read_text() == "mine\n"
    assert logs.path("implement").read_text() == "kept\n"
    assert not logs.path("implement", 2).exists()  # the half-made pair was taken back


def test_sessions_in_threads_each_get_a_log_of_their_own(folder: Path) -> None:
    logs = Logs(folder, "repo")
    made: list[Path] = []
    lock = threading.Lock()

    def one(index: int) -> None:
        sessions = Sessions(logs, CreatingOutside())
        sessions.run("implement", f"thread {index}")
        assert sessions.last_log is not None
        with lock:
            made.append(sessions.last_log)

    threads = [threading.Thread(target=one, args=(index,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(set(made)) == 8
    assert sorted(path.read_text() for path in made) == [f"thread {i}\n" for i in range(8)]
