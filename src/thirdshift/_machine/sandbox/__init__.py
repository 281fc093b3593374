"""The sandbox a session of a sandboxed Choice runs in, built from outside before it starts.

Built on bubblewrap (``bwrap``): the supervisor the adapter starts is the sandbox's outer
process; ``bwrap`` makes new user, PID, network, IPC, UTS and cgroup namespaces and the mounts
of :mod:`.view`, and runs the supervisor again as the sandbox's pid 1, which starts the CLI
(see the supervisor's ``sandboxed`` module). Nothing the agent says, writes or configures can
loosen it: the policy comes from the Choice's :class:`~thirdshift.Sandbox` and its Harness's
:class:`~thirdshift._sandbox.SandboxNeeds`, both read by the orchestrator before the sandbox
exists. docs/security.md says what it guarantees and what it does not.

- bwrap.py   which bwrap, whether this machine can sandbox, the namespaces
- view.py    what the session sees of the files (the mounts)
- gitdirs.py which parts of the worktree's git folders it may write
- homes.py   its private home, and what of the user's is copied in
- egress.py  what it may reach, and the environment that points its CLI there
- proxy.py   the egress proxy that serves it from outside
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from thirdshift._machine.sandbox.bwrap import NAMESPACES, bwrap_program, unavailable
from thirdshift._machine.sandbox.egress import Egress, egress, hooks_of, written_by_hook
from thirdshift._machine.sandbox.homes import PrivateHome, prepared_home
from thirdshift._machine.sandbox.proxy import EgressProxy
from thirdshift._machine.sandbox.view import Seen, mounts
from thirdshift._sandbox import Sandbox, SandboxNeeds
from thirdshift.errors import ConfigurationError, SandboxUnavailable


def checked_machine() -> str:
    """The ``bwrap`` to run; :class:`~thirdshift.errors.SandboxUnavailable` saying why and
    what to do where this machine cannot sandbox."""
    why = unavailable()
    program = bwrap_program()
    if why is not None or program is None:
        raise SandboxUnavailable(f"cannot run a sandboxed session: {why}")
    return program


@dataclass(frozen=True)
class Sandboxed:
    """One call's sandbox: ``bwrap`` and its arguments (the command to run inside follows
    them), the CLI's environment inside, what it may reach, and its private home."""

    bwrap: tuple[str, ...]
    env: Mapping[str, str]
    egress: Egress
    home: PrivateHome

    @property
    def listen(self) -> str:
        """The listening sockets the sandbox's pid 1 makes, as its argv says them."""
        return ",".join(str(endpoint) for endpoint in self.egress.listening)

    def outside_env(self) -> dict[str, str]:
        """The CLI's environment as it reads from outside, where a Harness reads the CLI's own
        files after the call: each variable naming a path in ``HOME`` or in a private state
        folder (``HOME`` itself, ``CODEX_HOME``) names it in the private copy instead."""
        moved = [(self.home.inside, self.home.folder)]
        moved += [(inside, folder) for folder, inside in self.home.elsewhere]
        seen = dict(self.env)
        for name, value in self.env.items():
            if not os.path.isabs(value):
                continue
            path = Path(value)
            for inside, folder in moved:
                if path == inside or inside in path.parents:
                    seen[name] = str(folder / path.relative_to(inside))
                    break
        return seen


def sandboxed(
    sandbox: Sandbox,
    needs: SandboxNeeds,
    *,
    env: Mapping[str, str],
    worktree: Path,
    program: str,
    logs: Path,
    hidden: Sequence[Path] = (),
    environ: Mapping[str, str] = os.environ,
) -> Sandboxed:
    """The sandbox for one call of a CLI (``program``, its environment ``env``) in
    ``worktree``, logging to the folder ``logs``; ``hidden`` are further folders it must not
    see (the skills' source), ``environ`` the orchestrator's own environment (its testing
    hooks). Makes or refreshes the private home; starts nothing."""
    bwrap = checked_machine()
    home = env.get("HOME", "")
    if not os.path.isabs(home) or Path(home) == Path("/"):
        raise ConfigurationError(
            f"a sandboxed session needs HOME to be an absolute folder other than /, not {home!r}"
        )
    hooks = hooks_of(environ)
    reached = egress(needs, sandbox, env, hooks)
    inside = dict(reached.env)
    inside["TMPDIR"] = "/tmp"  # the sandbox's own, private /tmp
    private = prepared_home(logs, worktree, Path(os.path.normpath(home)), needs, env)
    seen = Seen(
        worktree=worktree,
        home=private,
        program=Path(program),
        path=env.get("PATH", ""),
        read=tuple(Path(path) for path in sandbox.read),
        write=tuple(Path(path) for path in (*sandbox.write, *written_by_hook(hooks))),
        hidden=(logs, *hidden),
    )
    argv = [bwrap, *NAMESPACES, "--as-pid-1", "--chdir", str(worktree)]
    for mount in mounts(seen):
        argv += mount.argv()
    return Sandboxed(bwrap=tuple(argv), env=inside, egress=reached, home=private)


__all__ = ["EgressProxy", "Sandboxed", "checked_machine", "sandboxed"]
