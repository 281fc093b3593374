"""A hostile agent in a sandboxed session: each escape it tries gets nothing.

Each session runs the toy CLI under the real machine adapter, in a ``Sandbox``; the agent is
the toy's ``exec`` action, Python that tries an escape and prints what it found as one JSON
line (``FOUND:{...}``). What the sandbox must still allow (the worktree, a commit, a model on
loopback that the session may reach) is tried in the same sessions.
"""

from __future__ import annotations

import json
import os
import socketserver
import textwrap
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from repos import git, new_repo
from toy import Toy

from thirdshift import Choice, Sandbox, Watchdogs
from thirdshift._machine import MachineOutside
from thirdshift._machine.sandbox.bwrap import unavailable
from thirdshift._sandbox import Api, SandboxNeeds

pytestmark = [
    pytest.mark.usefixtures("toy_on_path"),
    pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}"),
]

E2E = Path(__file__).parent
TOY_FOLDERS = (str(E2E),)  # the toy's program lives here: the sandbox must show it
CALLS_AN_API = SandboxNeeds(
    apis=(Api("https://api.anthropic.com", "ANTHROPIC_BASE_URL", ("ANTHROPIC_API_KEY",)),)
)


def found_by(
    code: str,
    worktree: Path,
    logs: Path,
    sandbox: Sandbox | None = None,
    env: dict[str, str | None] | None = None,
) -> dict[str, Any]:
    """Run ``code`` as the agent of a sandboxed toy session; the object it printed. The toy
    calls Anthropic's API with ``ANTHROPIC_API_KEY``, as Claude does."""
    program = textwrap.dedent(code).encode().hex()
    toy = Toy([f"exec:{program}", "out:FINAL:done"], sandbox_needs=CALLS_AN_API)
    box = sandbox or Sandbox()
    box = Sandbox(
        network=box.network,
        read=(*box.read, *TOY_FOLDERS),
        write=box.write,
        pids=box.pids,
        memory=box.memory,
    )
    outside = MachineOutside(
        worktree,
        Choice(toy, sandbox=box, env=tuple((env or {}).items()), env_policy="minimal"),
        progress=lambda _: None,
        watchdogs=Watchdogs(stop_grace=0.5),
        drain=0.5,
    )
    ended = outside.run_session("s", None, "p", logs / "s.jsonl")
    assert ended.final_message == "done"
    [line] = [line for line in toy.readers[-1].lines if line.startswith("FOUND:")]
    found: dict[str, Any] = json.loads(line.removeprefix("FOUND:"))
    return found


PROBE = """
import json, os
def attempt(action):
    try:
        return action()
    except OSError as error:
        return f"refused: {error.strerror}"
"""


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return tmp_path / "logs"


def test_the_users_home_is_not_seen_only_a_private_one(
    worktree: Path, logs: Path, own_home: Path
) -> None:
    (own_home / ".ssh").mkdir()
    (own_home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    (own_home / ".bashrc").write_text("# the user's")
    code = (
        PROBE
        + """
home = os.environ["HOME"]
print("FOUND:" + json.dumps({
    "home": home,
    "listed": sorted(os.listdir(home)),
    "key": attempt(lambda: open(os.path.join(home, ".ssh", "id_rsa")).read()),
    "bashrc": attempt(lambda: open(os.path.join(home, ".bashrc"), "a").write("evil\\n")),
}))
"""
    )
    found = found_by(code, worktree, logs)

    assert found["home"] == str(own_home)  # the same path, so variables naming it still hold
    assert ".ssh" not in found["listed"]
    assert found["key"] == "refused: No such file or directory"
    assert found["bashrc"] == 5  # written to the private home...
    assert (own_home / ".bashrc").read_text() == "# the user's"  # ...never the user's


def test_nothing_outside_the_worktree_is_written_or_seen(
    worktree: Path, logs: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other-worktree"
    other.mkdir()
    (other / "secret.txt").write_text("another session's work")
    probe = Path("/tmp") / f"thirdshift-probe-{uuid.uuid4().hex}"  # in /tmp itself, not under it
    code = (
        PROBE
        + f"""
print("FOUND:" + json.dumps({{
    "own": attempt(lambda: open("made-here.txt", "w").write("ok")),
    "other": attempt(lambda: open({str(other / "secret.txt")!r}).read()),
    "system": attempt(lambda: open("/usr/evil", "w").write("x")),
    "tmp": attempt(lambda: open({str(probe)!r}, "w").write("private")),
    "logs": attempt(lambda: os.listdir({str(logs)!r})),
}}))
"""
    )
    found = found_by(code, worktree, logs)

    assert found["own"] == 2
    assert (worktree / "made-here.txt").read_text() == "ok"
    assert found["other"] == "refused: No such file or directory"
    assert found["system"] == "refused: Read-only file system"
    assert found["tmp"] == 7  # a /tmp of its own...
    assert not probe.exists()
    assert found["logs"] == "refused: No such file or directory"


def test_a_commit_works_and_nothing_planted_in_git_runs_later(tmp_path: Path, logs: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    (repo / "a.txt").write_text("a")
    git("add", "a.txt", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first", cwd=repo)
    worktree = tmp_path / "linked"
    git("worktree", "add", "-q", str(worktree), cwd=repo)
    code = (
        PROBE
        + """
import subprocess
def run(*argv):
    done = subprocess.run(argv, capture_output=True, text=True)
    return done.returncode
gitdir = open(".git").read().split(": ", 1)[1].strip()
pointer = open(os.path.join(gitdir, "commondir")).read().strip()
common = os.path.normpath(os.path.join(gitdir, pointer))
open("b.txt", "w").write("b")
print("FOUND:" + json.dumps({
    "add": run("git", "add", "b.txt"),
    "commit": run("git", "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-qm", "agent's"),
    "hook": attempt(lambda: open(os.path.join(common, "hooks", "pre-push"), "w").write("x")),
    "hooks_path": run("git", "config", "core.hooksPath", "/tmp/evil"),
    "dotgit": attempt(lambda: open(".git", "w").write("gitdir: /tmp/evil\\n")),
    "moved": attempt(lambda: os.rename(".git", "git-old")),
}))
"""
    )
    found = found_by(code, worktree, logs)

    assert (found["add"], found["commit"]) == (0, 0)
    assert git("log", "-1", "--format=%s", cwd=worktree).strip() == "agent's"
    assert found["hook"] == "refused: Read-only file system"
    assert found["hooks_path"] != 0
    assert "hooksPath" not in (repo / ".git" / "config").read_text()
    assert found["dotgit"] == "refused: Read-only file system"
    assert found["moved"].startswith("refused: ")
    assert (worktree / ".git").read_text().startswith("gitdir: ")


def test_no_process_but_the_sessions_is_seen_or_reached(
    worktree: Path, logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORCHESTRATOR_SECRET", "s3cret")
    code = (
        PROBE
        + f"""
import signal
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
print("FOUND:" + json.dumps({{
    "pids": pids,
    "orchestrator": attempt(lambda: os.kill({os.getpid()}, signal.SIGKILL)),
    "pid1_environ": attempt(lambda: open("/proc/1/environ", "rb").read().decode()),
    "cgroups": attempt(lambda: os.listdir("/sys/fs/cgroup")),
}}))
"""
    )
    found = found_by(code, worktree, logs)

    # pid 1 (the supervisor) and the toy, whose own code the agent is: nothing else.
    assert found["pids"] == [1, 2]
    assert found["orchestrator"] == "refused: No such process"
    # /proc/1/environ is the sandbox's pid 1's: the CLI's environment, nothing more.
    assert "ORCHESTRATOR_SECRET" not in found["pid1_environ"]
    assert found["cgroups"] == "refused: No such file or directory"


def test_no_key_is_found_in_any_variable_or_process(worktree: Path, logs: Path) -> None:
    key = "sk-ant-api03-" + "k" * 40
    code = """
import json, os
seen = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            seen.append(open(f"/proc/{pid}/environ", "rb").read().decode("utf-8", "replace"))
        except OSError:
            pass
print("FOUND:" + json.dumps({"mine": os.environ.get("ANTHROPIC_API_KEY"), "all": seen}))
"""
    found = found_by(code, worktree, logs, env={"ANTHROPIC_API_KEY": key})

    assert key not in json.dumps(found)


class _Answer(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.sendall(b"reached\n")


@pytest.fixture
def loopback_server() -> Iterator[int]:
    """A server on the host's loopback: what the Temporal frontend, another session's fake
    model or the orchestrator's own port would be."""
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Answer) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield server.server_address[1]
        server.shutdown()


REACH = """
import json, os, socket
def reach(host, port):
    try:
        with socket.create_connection((host, port), timeout=3) as s:
            return s.recv(64).decode()
    except OSError as error:
        return f"refused: {error.strerror or error}"
def through_proxy(target):
    proxy = os.environ["HTTPS_PROXY"].removeprefix("http://")
    host, port = proxy.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=3) as s:
        s.sendall(f"CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n".encode())
        return s.recv(200).decode().split("\\r\\n")[0]
"""


def test_the_hosts_loopback_and_the_metadata_address_are_out_of_reach(
    worktree: Path, logs: Path, loopback_server: int
) -> None:
    code = (
        REACH
        + f"""
print("FOUND:" + json.dumps({{
    "loopback": reach("127.0.0.1", {loopback_server}),
    "metadata": reach("169.254.169.254", 80),
    "proxied_loopback": through_proxy("127.0.0.1:{loopback_server}"),
    "proxied_metadata": through_proxy("169.254.169.254:80"),
    "proxied_elsewhere": through_proxy("example.com:443"),
}}))
"""
    )
    found = found_by(code, worktree, logs)

    assert found["loopback"].startswith("refused: ")
    assert found["metadata"].startswith("refused: ")
    assert found["proxied_loopback"] == "HTTP/1.1 403 Forbidden"
    assert found["proxied_metadata"] == "HTTP/1.1 403 Forbidden"
    assert found["proxied_elsewhere"] == "HTTP/1.1 403 Forbidden"


def test_an_allowed_loopback_endpoint_answers_at_the_same_address(
    worktree: Path, logs: Path, loopback_server: int
) -> None:
    code = (
        REACH
        + f"""
print("FOUND:" + json.dumps({{"allowed": reach("127.0.0.1", {loopback_server})}}))
"""
    )
    allowed = Sandbox(network=(f"127.0.0.1:{loopback_server}",))

    found = found_by(code, worktree, logs, sandbox=allowed)

    assert found["allowed"] == "reached\n"


def test_the_record_says_the_session_ran_sandboxed(worktree: Path, logs: Path) -> None:
    toy = Toy(["out:FINAL:done"])
    outside = MachineOutside(
        worktree,
        Choice(toy, sandbox=Sandbox(read=TOY_FOLDERS)),
        progress=lambda _: None,
        watchdogs=Watchdogs(stop_grace=0.5),
        drain=0.5,
    )

    ended = outside.run_session("s", None, "p", logs / "s.jsonl")

    assert ended.sandbox is True
    assert ended.containment in ("cgroup", "namespace")


def test_background_work_left_running_is_still_found_and_killed(worktree: Path, logs: Path) -> None:
    toy = Toy(["grandchild:300", "escapee:300", "out:FINAL:done"])
    outside = MachineOutside(
        worktree,
        Choice(toy, sandbox=Sandbox(read=TOY_FOLDERS)),
        progress=lambda _: None,
        watchdogs=Watchdogs(stop_grace=0.5),
        drain=0.5,
    )

    ended = outside.run_session("s", None, "p", logs / "s.jsonl")

    assert len(ended.killed) == 2
    assert all("toy_cli.py" in work for work in ended.killed)
