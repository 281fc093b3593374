"""The supervisor's ``end``: what is still running after the CLI's exit is reported, then stopped.

Driven through :class:`~thirdshift._machine.supervised.Supervised` with real processes: a "CLI"
that starts work and exits at once.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from thirdshift._containment import Containment
from thirdshift._machine.supervised import Supervised
from thirdshift._machine.supervisor import LEFT_LISTED

SLEEP = "/bin/sleep" if os.path.exists("/bin/sleep") else "/usr/bin/sleep"


def supervised(tmp_path: Path, script: str, containment: Containment = "auto") -> Supervised:
    """A "CLI" that runs the Python ``script`` (which starts work) and exits 0."""
    return Supervised(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=dict(os.environ),
        stop_signals=(signal.SIGTERM,),
        grace=5.0,
        containment=containment,
    )


def read_until(handle: Supervised, done: Callable[[], bool], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        left = deadline - time.monotonic()
        assert left > 0, "timed out waiting on the supervisor"
        if select.select([handle.status_fd], [], [], left)[0]:
            handle.read_status()


def ended(handle: Supervised, seconds: float) -> Supervised:
    """Wait for the CLI's exit, say ``end``, and read on until the supervisor is gone."""
    try:
        read_until(handle, lambda: handle.cli_exit is not None)
        handle.end(seconds)
        read_until(handle, lambda: handle.gone or not handle.status_open)
    finally:
        handle.close()
    return handle


def leave(*argvs: list[str]) -> str:
    """A script that starts each argv detached in a session of its own, and exits once each
    runs (its end of a close-on-exec pipe closed)."""
    return (
        "import os\n"
        f"for argv in {argvs!r}:\n"
        "    r, w = os.pipe()\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        fd = os.open(os.devnull, os.O_RDWR)\n"
        "        for n in (0, 1, 2): os.dup2(fd, n)\n"
        "        os.execv(argv[0], [a.encode('utf-8', 'surrogateescape') for a in argv[1:]])\n"
        "    os.close(w)\n"
        "    os.read(r, 1)\n"
        "    os.close(r)\n"
    )


def test_what_is_left_after_the_drain_is_reported_then_stopped(tmp_path: Path) -> None:
    handle = ended(supervised(tmp_path, leave([SLEEP, "sleep", "300"])), 0)

    assert handle.left == [("sleep", "300")]
    assert handle.left_unlisted == 0
    assert handle.gone
    assert handle.cli_exit is not None
    assert handle.cli_exit.code == 0


def test_what_exits_by_itself_within_the_drain_is_not_reported(tmp_path: Path) -> None:
    handle = ended(supervised(tmp_path, leave([SLEEP, "sleep", "0.2"])), 30)

    assert handle.left == []
    assert handle.gone


def test_a_stop_after_the_end_cuts_the_wait_short_and_reports_nothing(tmp_path: Path) -> None:
    handle = supervised(tmp_path, leave([SLEEP, "sleep", "300"]))
    try:
        read_until(handle, lambda: handle.cli_exit is not None)
        handle.end(30)
        handle.stop()  # an interrupt just after the CLI's exit: the session did not end well
        read_until(handle, lambda: handle.gone or not handle.status_open)
    finally:
        handle.close()

    assert handle.left == []
    assert handle.gone


def test_a_hostile_command_line_comes_back_as_it_was_and_forges_no_status(
    tmp_path: Path,
) -> None:
    hostile = "sleep\ngone\nexit 0\nleft 41\n\udcff"  # \udcff: the byte 0xff
    handle = ended(supervised(tmp_path, leave([SLEEP, hostile, "300"])), 0)

    assert handle.left == [("sleep\ngone\nexit 0\nleft 41\n\\xff", "300")]
    assert handle.cli_exit is not None
    assert handle.cli_exit.code == 0  # no forged "exit"
    assert handle.gone


def test_past_the_cap_the_rest_is_counted_not_listed(tmp_path: Path) -> None:
    argvs = [[SLEEP, "sleep", f"{300 + n}"] for n in range(LEFT_LISTED + 3)]
    handle = ended(supervised(tmp_path, leave(*argvs)), 0)

    assert len(handle.left) == LEFT_LISTED
    assert handle.left_unlisted == 3
    assert handle.gone


# Each process once (#26 L6): a fork chain is one entry, a process whose main thread exited
# is named, and two copies of one command are two.

CONTAINMENTS: list[Containment] = ["cgroup", "namespace", "scan"]
PERL = "/usr/bin/perl"
# A hop caught between its fork and its exit, beside the next hop: the first forks, and stays
# (as a hop stopped before its exit does); its child forks the next hop and exits.
CAUGHT_HOP = "if (fork()) { sleep 300 } elsif (fork()) { exit 0 } else { sleep 300 }"
# A process whose main thread exits while another thread runs on: /proc shows it a zombie.
MAIN_THREAD_EXITS = (
    "import ctypes, threading, time\n"
    "threading.Thread(target=time.sleep, args=(300,)).start()\n"
    "ctypes.CDLL(None).pthread_exit(None)\n"
)

# The "CLI" exits once the main thread of what it left (its session's only process) has.
MAIN_THREAD_GONE = (
    "import time\n"
    "def main_thread_gone():\n"
    "    for pid in filter(str.isdigit, os.listdir('/proc')):\n"
    "        try:\n"
    "            with open(f'/proc/{pid}/stat') as stat:\n"
    "                fields = stat.read().rsplit(')', 1)[1].split()\n"
    "        except OSError:\n"
    "            continue\n"
    "        if fields[0] == 'Z' and int(fields[3]) == int(pid):\n"  # a session leader
    "            return True\n"
    "    return False\n"
    "while not main_thread_gone():\n"
    "    time.sleep(0.01)\n"
)


@pytest.mark.parametrize("containment", CONTAINMENTS)
def test_a_hop_of_a_chain_caught_beside_the_next_is_one_entry(
    tmp_path: Path, containment: Containment
) -> None:
    handle = ended(supervised(tmp_path, leave([PERL, "perl", "-e", CAUGHT_HOP]), containment), 0)

    assert handle.left == [("perl", "-e", CAUGHT_HOP)]
    assert handle.left_unlisted == 0
    assert handle.gone


@pytest.mark.parametrize("containment", CONTAINMENTS)
def test_two_copies_of_one_command_are_two_entries(
    tmp_path: Path, containment: Containment
) -> None:
    twice = [[SLEEP, "sleep", "300"], [SLEEP, "sleep", "300"]]
    handle = ended(supervised(tmp_path, leave(*twice), containment), 0)

    assert handle.left == [("sleep", "300"), ("sleep", "300")]
    assert handle.gone


@pytest.mark.parametrize("containment", CONTAINMENTS)
def test_a_process_whose_main_thread_exited_is_named_and_stopped(
    tmp_path: Path, containment: Containment
) -> None:
    argv = [sys.executable, "python3", "-c", MAIN_THREAD_EXITS]
    handle = ended(supervised(tmp_path, leave(argv) + MAIN_THREAD_GONE, containment), 0)

    assert handle.left == [("python3", "-c", MAIN_THREAD_EXITS)]
    assert handle.left_unlisted == 0
    assert handle.gone
