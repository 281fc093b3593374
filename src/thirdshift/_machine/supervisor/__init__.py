"""The per-session supervisor: a tiny process that owns everything a session starts.

The machine adapter runs this package from its path, ``python -I -S -c LAUNCH
supervisor/__init__.py CONTAINMENT CWD GRACE SIGNALS PROGRAM ARGS...`` (``LAUNCH`` in
_machine/launch.py loads it through the import system, so from its cached bytecode), in a new
session of its own, with its channel to the adapter
(one end of a ``socketpair``) as fd 3 and, for the ``cgroup`` containment, the session's own
cgroup folder as fd 4. No descriptor number or secret is in its argv, and it makes itself
non-dumpable, so that no other process of the user can open its descriptors or read its memory
through ``/proc`` (a socket cannot be reopened through ``/proc`` at all). It

1. ignores every signal it can (the session's processes may signal it by its pid) and makes
   itself a child subreaper (``PR_SET_CHILD_SUBREAPER``): every process the CLI starts that
   loses its parent is re-parented here instead of to init, so the whole tree stays findable
   below this pid. Under the ``namespace`` containment it first enters new PID and mount
   namespaces (and a user namespace mapping only its own uid, when it is not root) and forks
   their pid 1, which does all that follows; its end makes the kernel kill everything in the
   namespace, and it dies with the outer process (``PR_SET_PDEATHSIG``). The outer process
   waits for it and says ``gone`` once it has ended;
2. starts the CLI (moved into the session's cgroup before it execs, under ``cgroup``) in a
   process group of its own with default signal dispositions, an empty signal mask and the
   supervisor's stdio, then lets go of its own copies of the stdio, so that the stream ends
   when the CLI and what it started let go of it; it says ``started <pid>`` with a pidfd of the
   CLI attached (``SCM_RIGHTS``; under ``namespace`` a pidfd of the namespace's pid 1 too), so
   that the adapter sees the CLI's exit, and signals it, without trusting any pid;
3. reaps every child, writing ``exit <wait status>`` when the CLI itself exits;
4. on ``end <seconds>`` (the CLI has exited and its session ended), waits up to that long for
   what is left to exit by itself, then reports each process still running directly below it
   (``left <hex of its /proc cmdline>``) and stops them as on ``stop``. On ``stop`` (or the
   channel closing: the adapter died) it sends each stop signal in turn (each followed by
   SIGCONT) to every process of the session, waiting up to GRACE seconds for them to exit,
   then kills what remains: ``cgroup.kill`` under ``cgroup``, SIGKILL of every process found
   (and of its process group and session) otherwise. ``kill`` skips to that at once;
5. writes ``gone`` once nothing is left (``cgroup.events`` says ``populated 0`` and no process
   is found below it; under ``scan``, several looks in a row found nothing and no child was
   reaped between them) and exits 0. If it cannot tell, it exits 1 without ``gone``, and the
   adapter kills the tree itself and fails the session.

It imports only the standard library, so that it runs with ``-I -S`` and starts in a few tens
of milliseconds; its modules import one another relatively, as the package is loaded under a
name of its own. The adapter imports it too, for the words of the protocol (:mod:`.protocol`).
See docs/stopping.md for why this shape, and for each containment.

- protocol.py      the words of the protocol, the descriptors, the caps both ends agree on
- procs.py         processes as /proc shows them; signalling them through pidfds
- cgroup.py        the session's cgroup: join, look, freeze, kill
- containment.py   entering a cgroup or PID and mount namespaces; the namespace probe
- session.py       Supervisor: the channel, reaping, the looks below, the waits
- stopping.py      stop signals with their grace, then the kill, until nothing is left
- left_running.py  at the normal end: the wait, the ``left`` reports, then the stop
- main.py          argv, the containment, the CLI's start, the loop: ``run(argv)``
"""

from .main import run
from .protocol import (
    CGROUP,
    CGROUP_FD,
    CHANNEL_FD,
    CONTAINMENTS,
    END,
    EXIT,
    GONE,
    INIT,
    KILL,
    KILL_WAIT_SECONDS,
    LEFT,
    LEFT_BYTES,
    LEFT_LISTED,
    LEFT_UNLISTED,
    LISTENING,
    MAX_LINE,
    NAMESPACE,
    PIDFD_SIGNAL_PROCESS_GROUP,
    PROBE,
    SANDBOX,
    SCAN,
    SPAWN_ERROR,
    STARTED,
    STDIO_FD,
    STOP,
)

__all__ = [
    "CGROUP",
    "CGROUP_FD",
    "CHANNEL_FD",
    "CONTAINMENTS",
    "END",
    "EXIT",
    "GONE",
    "INIT",
    "KILL",
    "KILL_WAIT_SECONDS",
    "LEFT",
    "LEFT_BYTES",
    "LEFT_LISTED",
    "LEFT_UNLISTED",
    "LISTENING",
    "MAX_LINE",
    "NAMESPACE",
    "PIDFD_SIGNAL_PROCESS_GROUP",
    "PROBE",
    "SANDBOX",
    "SCAN",
    "SPAWN_ERROR",
    "STARTED",
    "STDIO_FD",
    "STOP",
    "run",
]
