"""``thirdshift demo --fleet`` end to end: its own dev server, three hosts, seven sessions."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

THIRDSHIFT = str(Path(sys.executable).with_name("thirdshift"))


def _rows(stdout: str) -> dict[str, str]:
    """The table's rows, by worktree."""
    rows = {}
    for line in stdout.splitlines():
        words = line.split()
        if words and words[0] in {"greet", "limits", "stuck", "spend", "crash", "docs", "lint"}:
            rows[words[0]] = line
    return rows


def test_the_fleet_demo_plays_each_ending_and_leaves_nothing_running(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    done = subprocess.run(
        [THIRDSHIFT, "demo", "--fleet", "--folder", str(folder)],
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _rows(done.stdout)
    assert "implement (work killed), implement-resume" in rows["greet"]
    assert "implement (RateLimited), implement-continued" in rows["limits"]
    assert "done: Added farewell(), after the limit." in rows["limits"]
    assert "implement (Interrupted)" in rows["stuck"]
    assert "cancelled" in rows["stuck"]
    assert "review (BudgetExhausted)" in rows["spend"]
    assert "tokens" in rows["spend"]
    assert "of 1000" in rows["spend"]
    # Its worker killed (kill -9) mid-session, the session is continued by id on its host.
    assert rows["crash"].split()[1] == "host-c"
    assert "implement (worker lost), implement-continued" in rows["crash"]
    assert "done: Made the suite faster, on my host." in rows["crash"]
    assert "kill -9 of its worker" in done.stdout
    for name in ("docs", "lint"):
        assert rows[name].split()[1] in {"host-a", "host-b"}
        assert "done:" in rows[name]
    # A Resume and a continuation run on the host of the session they continue.
    for name in ("greet", "limits"):
        assert rows[name].split()[1] in {"host-a", "host-b"}
    assert "Processes left running: none" in done.stdout
    assert "Traceback" not in done.stderr


def test_the_fleet_demo_without_the_extra_names_it_and_exits_2(tmp_path: Path) -> None:
    blocked = (
        "import sys; sys.modules['temporalio'] = None\n"
        "from thirdshift._cli import main\n"
        "sys.exit(main(['demo', '--fleet', '--folder', sys.argv[1]]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocked, str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "pip install 'thirdshift[temporal]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_fleet_demo_refuses_a_folder_that_holds_anything(tmp_path: Path) -> None:
    (tmp_path / "left").write_text("")
    done = subprocess.run(
        [THIRDSHIFT, "demo", "--fleet", "--folder", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "must be a new or empty folder" in done.stderr


def test_ctrl_c_stops_the_fleet_demo_quietly_and_leaves_nothing_running(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    demo = subprocess.Popen(
        [THIRDSHIFT, "demo", "--fleet", "--folder", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a group of its own, as a terminal's foreground job is
    )
    assert demo.stdout is not None
    for line in demo.stdout:  # the hosts are up once the demo names the second
        if line.startswith("  host-b:"):
            break
    time.sleep(4.0)  # the sessions are under way
    os.killpg(demo.pid, signal.SIGINT)  # as Ctrl-C: to every process of the job
    stdout, stderr = demo.communicate(timeout=120)

    assert demo.returncode == 130
    assert stderr.splitlines()[-1] == "thirdshift: interrupted"
    assert "Traceback" not in stderr
    assert "never retrieved" not in stderr
    assert "tcp connect error" not in stdout  # the server outlived the workers' shutdown
    left = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if str(folder) in " ".join(p.info["cmdline"] or [])
    ]
    assert left == []
