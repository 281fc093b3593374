"""Limits one session cannot exceed (security review 3, M1): processes, memory, the OOM pick.

Each session runs the toy CLI under the real machine adapter; the toy's ``exec`` action is the
agent, printing what it found as ``FOUND:{...}``. The caps are set where this machine has the
controllers (cgroup v2 delegated to the session's cgroup, or the v1 hierarchies); the tests
that need one say so when it has none.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from toy import Toy

from thirdshift import Choice, Sandbox, SessionFailed, Watchdogs
from thirdshift._machine import MachineOutside
from thirdshift._machine.caps import CapGroups, Caps
from thirdshift._machine.sandbox.bwrap import unavailable

pytestmark = pytest.mark.usefixtures("toy_on_path")

E2E = Path(__file__).parent
SANDBOXED = pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox: {unavailable()}")


def _controllable(controller: str) -> bool:
    """Whether a cap of ``controller``'s can be set here without a session cgroup (v1)."""
    caps = Caps(pids=None, memory=1 << 30) if controller == "memory" else Caps(pids=1 << 20)
    made = CapGroups.create(caps, None)
    try:
        return controller in made.applied
    finally:
        made.remove()


def run_agent(
    code: str, worktree: Path, logs: Path, sandbox: Sandbox | None
) -> tuple[dict[str, Any] | None, MachineOutside]:
    toy = Toy([f"exec:{textwrap.dedent(code).encode().hex()}", "out:FINAL:done"])
    if sandbox is not None:
        sandbox = Sandbox(read=(str(E2E),), pids=sandbox.pids, memory=sandbox.memory)
    outside = MachineOutside(
        worktree,
        Choice(toy, sandbox=sandbox),
        progress=lambda _: None,
        watchdogs=Watchdogs(stop_grace=0.5),
        drain=0.5,
    )
    outside.run_session("s", None, "p", logs / "s.jsonl")
    found = [line for line in toy.readers[-1].lines if line.startswith("FOUND:")]
    return (json.loads(found[0].removeprefix("FOUND:")) if found else None), outside


OOM = """
import json, os
print("FOUND:" + json.dumps({
    "own": open("/proc/self/oom_score_adj").read().strip(),
}))
"""


@pytest.mark.parametrize("sandbox", [None, pytest.param(Sandbox(), marks=SANDBOXED)])
def test_every_process_of_a_session_is_the_oom_killers_first_pick(
    worktree: Path, tmp_path: Path, sandbox: Sandbox | None
) -> None:
    found, _ = run_agent(OOM, worktree, tmp_path, sandbox)

    assert found == {"own": "1000"}


def test_the_supervisor_is_not_the_oom_killers_pick(worktree: Path, tmp_path: Path) -> None:
    code = """
import json, os
print("FOUND:" + json.dumps({"parent": open(f"/proc/{os.getppid()}/oom_score_adj").read()}))
"""
    found, _ = run_agent(code, worktree, tmp_path, None)

    assert found == {"parent": "0\n"}


FORK_BOMB = """
import json, os, time
children = 0
refused = None
while children < 400:
    try:
        pid = os.fork()
    except OSError as error:
        refused = error.strerror
        break
    if pid == 0:
        time.sleep(5)
        os._exit(0)
    children += 1
print("FOUND:" + json.dumps({"children": children, "refused": refused}))
"""


@SANDBOXED
@pytest.mark.skipif(not _controllable("pids"), reason="no pids controller here")
def test_a_fork_bomb_stops_at_the_sessions_cap(worktree: Path, tmp_path: Path) -> None:
    found, _ = run_agent(FORK_BOMB, worktree, tmp_path, Sandbox(pids=50))

    assert found is not None
    assert found["refused"] == "Resource temporarily unavailable"
    assert found["children"] < 50


@pytest.mark.skipif(not _controllable("pids"), reason="no pids controller here")
def test_a_session_without_a_sandbox_is_capped_by_default(worktree: Path, tmp_path: Path) -> None:
    code = """
import json
caps = []
for line in open("/proc/self/cgroup").read().splitlines():
    number, names, path = line.split(":", 2)
    if "pids" in names.split(","):
        caps.append(open(f"/sys/fs/cgroup/pids{path}/pids.max").read().strip())
    if number == "0":
        try:
            caps.append(open(f"/sys/fs/cgroup{path}/pids.max").read().strip())
        except OSError:
            pass
print("FOUND:" + json.dumps({"caps": caps}))
"""
    found, _ = run_agent(code, worktree, tmp_path, None)

    assert found is not None
    assert "4096" in found["caps"]


MEMORY_HOG = """
import json
hoard = []
for _ in range(64):
    hoard.append(bytearray(8 << 20))  # 512 MiB in all, touched as it is made
print("FOUND:" + json.dumps({"survived": len(hoard)}))
"""


@SANDBOXED
@pytest.mark.skipif(not _controllable("memory"), reason="no memory controller here")
def test_a_memory_hog_is_killed_inside_its_session(worktree: Path, tmp_path: Path) -> None:
    with pytest.raises(SessionFailed, match="exited by signal SIGKILL"):
        run_agent(MEMORY_HOG, worktree, tmp_path, Sandbox(memory=128 << 20))
