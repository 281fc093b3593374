"""The containments as an unprivileged user: no cgroup to write, a user namespace instead.

The session runs in a child process as ``nobody`` (``setpriv``), with a copy of thirdshift and
pluggy (its one dependency) in a folder any user can read, under the system's own Python: the
project's interpreter and checkout may sit below a folder only root may enter (``/root``).
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
    from thirdshift import Choice, ThirdshiftError, Watchdogs
    from thirdshift._machine import MachineOutside
    from thirdshift._machine.allowed import allowed

    folder, containment, action = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    install_toy(folder / "bin")
    import os
    os.environ["PATH"] = f"{folder / 'bin'}:{os.environ['PATH']}"
    (folder / "work").mkdir(exist_ok=True)
    said = {"uid": os.geteuid(), "allowed": list(allowed())}
    try:
        outside = MachineOutside(
            folder / "work",
            Choice(Toy([action]), containment=containment),
            progress=lambda _: None,
            watchdogs=Watchdogs(stop_grace=1.0),
            drain=0.5,
        )
        logs = folder / f"logs-{os.getpid()}"  # a folder of our own: logs refuse others'
        ended = outside.run_session("s", None, "p", logs / "log")
        said.update(killed=list(ended.killed), containment=ended.containment)
    except ThirdshiftError as error:
        said["error"] = str(error)
    print(json.dumps(said))
    """
)


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder ``nobody`` can read and write, with thirdshift, pluggy and the toy copied in."""
    assert PYTHON is not None, "the system's python3 is needed to run as another user"
    folder = Path(tempfile.mkdtemp(prefix="thirdshift-nobody-"))
    try:
        folder.chmod(0o777)
        shutil.copytree(Path(thirdshift.__file__).parent, folder / "lib" / "thirdshift")
        shutil.copytree(Path(pluggy.__file__).parent, folder / "lib" / "pluggy")
        shutil.copy(E2E / "toy.py", folder / "lib" / "toy.py")
        shutil.copytree(E2E / "programs", folder / "lib" / "programs")
        (folder / "session.py").write_text(SESSION)
        for path in folder.rglob("*"):
            path.chmod(0o777 if path.is_dir() else 0o666)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def as_nobody(folder: Path, containment: str, action: str) -> dict[str, object]:
    found: dict[str, object] = json.loads(
        as_nobody_running(folder, "session.py", str(folder), containment, action)
    )
    return found


def as_nobody_running(folder: Path, script: str, *args: str) -> str:
    """The last line the ``script`` in ``folder`` printed, run as ``nobody`` with ``args``."""
    assert PYTHON is not None
    done = subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            PYTHON,
            str(folder / script),
            *args,
        ],
        env={**os.environ, "PYTHONPATH": str(folder / "lib"), "HOME": str(folder)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1]


def test_an_unprivileged_user_is_allowed_the_namespace_and_the_scan(shared_folder: Path) -> None:
    said = as_nobody(shared_folder, "auto", "out:hi")

    assert said["uid"] == NOBODY
    assert said["allowed"] == ["namespace", "scan"]
    assert said["containment"] == "namespace"


@pytest.mark.parametrize("containment", ["namespace", "scan"])
@pytest.mark.parametrize("action", ["chain:once", "chain:every", "stubborn:300", "swarm:5000"])
def test_what_an_unprivileged_agent_leaves_running_is_killed_and_counted(
    shared_folder: Path, containment: str, action: str
) -> None:
    said = as_nobody(shared_folder, containment, action)

    assert said["containment"] == containment
    if not action.startswith("chain:"):  # a chain may hop past the report: docs/stopping.md
        assert said["killed"]
    # and the e2e fixture finds none of it alive


def test_forcing_a_cgroup_where_none_may_be_made_is_a_clear_error_before_anything_starts(
    shared_folder: Path,
) -> None:
    said = as_nobody(shared_folder, "cgroup", "out:hi")

    assert said["error"] == (
        "containment 'cgroup' is not allowed on this machine (allowed: namespace, scan); "
        "see docs/stopping.md"
    )
    assert not list(shared_folder.glob("logs-*"))


PLANTED_LOGS = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from thirdshift import ThirdshiftError
    from thirdshift._logs import create_log_files

    try:
        create_log_files(Path(sys.argv[1]) / "x.jsonl")
        print("written")
    except ThirdshiftError as error:
        print(error)
    """
)


def test_a_logs_folder_another_user_planted_as_a_symlink_to_a_private_one_is_refused(
    shared_folder: Path,
) -> None:
    # Another local user (uid 65533) plants /tmp/logs, leading to nobody's private folder.
    sticky, private = shared_folder / "tmp", shared_folder / "private"
    sticky.mkdir(mode=0o1777)
    sticky.chmod(0o1777)
    private.mkdir(mode=0o700)
    os.chown(private, NOBODY, NOBODY)
    logs = sticky / "logs"
    logs.symlink_to(private)
    os.lchown(logs, NOBODY - 1, NOBODY - 1)
    (shared_folder / "planted.py").write_text(PLANTED_LOGS)

    said = as_nobody_running(shared_folder, "planted.py", str(logs))

    assert said == (
        f"refusing to write Session logs to {logs}: {logs} is a symlink owned by another user "
        f"(uid {NOBODY - 1})"
    )
    assert list(private.iterdir()) == []
