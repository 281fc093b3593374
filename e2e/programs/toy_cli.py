"""A toy agent CLI for the machine adapter's tests: it does what its arguments say, in order.

Actions: ``out:TEXT`` (a line on stdout), ``raw:HEX`` (bytes on stdout), ``err:TEXT`` (a line
on stderr), ``stdin`` (copy stdin to stdout as one line), ``sleep:SECONDS``, ``exit:CODE``,
``die:SIGNAL``, ``hang`` (wait for signals, ignoring those given as ``ignore:SIGTERM``),
``grandchild:SECONDS`` (a child that keeps stdout open), ``escapee:SECONDS`` (a child that
calls setsid and ignores SIGTERM and SIGINT), ``daemon:SECONDS`` (a double-forked daemon),
``bulk:LINES`` (that many 100-byte lines), ``pidfile:PATH`` (write the pid of every process
started here to PATH), ``env:NAME`` (print the variable's value or ``<unset>``), ``closeout``
(close stdout and carry on), ``errbytes:COUNT`` (that many bytes on stderr, no newline),
``killgroup:SIGNAL`` (send SIGNAL to its own process group),
``killparent:SIGNAL`` (send SIGNAL to its parent, the supervisor), ``swarm:COUNT`` (that many
``sleep`` processes, each in a session of its own and ignoring SIGTERM and SIGINT),
``chain:once`` / ``chain:every`` (a perl process that forks and exits every 20 µs, calling
setsid once or on every hop), ``stubborn:SECONDS`` (a child in a session of its own that ignores
every signal it can), ``forge:HEX`` (write those bytes to every descriptor of its parent, the
supervisor, that /proc lets it open, and print ``forged`` and the kind of each that took
them), ``reopen:HEX`` (a child, as an agent's tool would be, opens the toy's own stdout
again through /proc, as for writing, and writes those bytes; says on stderr ``reopened`` or
``not reopened: <error>``), ``steal`` (such a child opens it as for reading, and says on stderr
whether it could), ``late:SECONDS:HEX`` (a child that keeps stdout and writes those bytes on
it that long after, once the toy has exited), ``exec:HEX`` (run that Python source, whose
prints are lines on stdout: what a hostile agent tries, in the test's own words),
``cgroups:NAME`` (make the cgroups ``NAME/inner`` inside its own, move a sleeper into the
inner one, and print ``CGROUP:<its own cgroup's folder>``), ``pinned:NAME`` (make the cgroup
``NAME`` inside its own and bind-mount it on itself, so that it cannot be removed). A SIGNAL
is a name (``SIGUSR1``) or ``RTMIN+N`` for a realtime signal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

state: dict[str, str] = {}


def note(pid: int) -> None:
    if "pidfile" in state:
        with open(state["pidfile"], "a") as file:
            file.write(f"{pid}\n")


def sleeper(seconds: str, *, setsid: bool = False, ignore: bool = False) -> None:
    pid = os.fork()
    if pid:
        note(pid)
        return
    if setsid:
        os.setsid()
    if ignore:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    time.sleep(float(seconds))
    os._exit(0)


def daemon(seconds: str) -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write)
        grandchild = int(os.read(read, 32))
        note(grandchild)
        os.waitpid(pid, 0)
        return
    os.setsid()
    second = os.fork()
    if second:
        os.write(write, str(second).encode())
        os._exit(0)
    time.sleep(float(seconds))
    os._exit(0)


def signal_named(name: str) -> int:
    if name.startswith("RTMIN+"):
        return signal.SIGRTMIN + int(name.removeprefix("RTMIN+"))
    return signal.Signals[name]


def swarm(count: int) -> None:
    """Start ``count`` detached sleepers at once (posix_spawn: no Python fork for each)."""
    sleep = "/bin/sleep" if os.path.exists("/bin/sleep") else "/usr/bin/sleep"
    kept = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGTERM, signal.SIGINT)}
    pids = [os.posix_spawn(sleep, [sleep, "300"], os.environ, setsid=True) for _ in range(count)]
    for signum, handler in kept.items():
        signal.signal(signum, handler)
    if "pidfile" in state:
        with open(state["pidfile"], "a") as file:
            file.write("".join(f"{pid}\n" for pid in pids))


CHAINS = {
    "once": "use POSIX; POSIX::setsid(); "
    "while (1) { select(undef, undef, undef, 0.00002); exit 0 if fork() }",
    "every": "use POSIX; "
    "while (1) { POSIX::setsid(); select(undef, undef, undef, 0.00002); exit 0 if fork() }",
}


def chain(which: str) -> None:
    """A fork chain: each hop forks and exits, so no pid lives long enough to be signalled."""
    devnull = os.open(os.devnull, os.O_RDWR)
    pid = os.posix_spawn(
        "/usr/bin/perl",
        ["perl", "-e", CHAINS[which]],
        os.environ,
        file_actions=[(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)],
    )
    os.close(devnull)
    note(pid)
    time.sleep(0.2)  # hopping by now


def stubborn(seconds: str) -> None:
    pid = os.fork()
    if pid:
        note(pid)
        return
    os.setsid()
    for signum in signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP}:
        try:
            signal.signal(signum, signal.SIG_IGN)
        except OSError:
            pass
    time.sleep(float(seconds))
    os._exit(0)


def forge(text: bytes) -> None:
    """Write ``text`` to every descriptor of the parent that can be opened for writing; print
    what kind of file each that took it was (``forged pipe pipe``), ``forged`` for none."""
    folder = f"/proc/{os.getppid()}/fd"
    taken = []
    try:
        names = os.listdir(folder)
    except OSError:
        names = []
    for name in names:
        try:
            target = os.readlink(f"{folder}/{name}")
            if target == os.devnull:
                continue  # the supervisor's stdio, let go of: writing there forges nothing
            fd = os.open(f"{folder}/{name}", os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            os.write(fd, text)
            taken.append(target.split(":", 1)[0])
        except OSError:
            pass
        finally:
            os.close(fd)
    print(" ".join(["forged", *taken]), flush=True)


def reopen(mode: int, text: bytes) -> None:
    """From a child, open the toy's stdout through /proc and write ``text`` (or, read-only,
    just say whether it opened): what a process of the session can do to the stream."""
    stdout = f"/proc/{os.getpid()}/fd/1"
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)
        return
    try:
        fd = os.open(stdout, mode | os.O_NONBLOCK)
    except OSError as error:
        print(f"not reopened: {error.strerror}", file=sys.stderr, flush=True)
        os._exit(0)
    if text:
        os.write(fd, text)
    print("reopened", file=sys.stderr, flush=True)
    os._exit(0)


def late(seconds: str, text: bytes) -> None:
    """A child that keeps the toy's stdout and writes ``text`` on it after ``seconds``."""
    pid = os.fork()
    if pid:
        note(pid)
        return
    time.sleep(float(seconds))
    os.write(1, text)
    os._exit(0)


def own_cgroup() -> str:
    """This process's cgroup v2 folder, as an agent finds it: the v2 mount, then its path."""
    with open("/proc/self/mountinfo") as mounts:
        mount = next(line.split()[4] for line in mounts if " - cgroup2 " in line)
    with open("/proc/self/cgroup") as cgroups:
        own = next(line[3:].strip() for line in cgroups if line.startswith("0::"))
    return os.path.join(mount, own.lstrip("/"))


def cgroups(name: str) -> None:
    folder = own_cgroup()
    inner = os.path.join(folder, name, "inner")
    os.makedirs(inner)
    sleep = "/bin/sleep" if os.path.exists("/bin/sleep") else "/usr/bin/sleep"
    devnull = os.open(os.devnull, os.O_RDWR)
    pid = os.posix_spawn(
        sleep,
        [sleep, "300"],
        os.environ,
        file_actions=[(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)],
    )
    os.close(devnull)
    note(pid)
    with open(os.path.join(inner, "cgroup.procs"), "w") as procs:
        procs.write(str(pid))
    print(f"CGROUP:{folder}", flush=True)


def pinned(name: str) -> None:
    folder = own_cgroup()
    path = os.path.join(folder, name)
    os.mkdir(path)
    subprocess.run(["mount", "--bind", path, path], check=True)
    print(f"CGROUP:{folder}", flush=True)


def main(actions: list[str]) -> None:
    ignored: set[int] = set()
    for action in actions:
        name, _, value = action.partition(":")
        if name == "out":
            print(value, flush=True)
        elif name == "raw":
            sys.stdout.buffer.write(bytes.fromhex(value))
            sys.stdout.flush()
        elif name == "err":
            print(value, file=sys.stderr, flush=True)
        elif name == "stdin":
            print(sys.stdin.read().replace("\n", "|"), flush=True)
        elif name == "sleep":
            time.sleep(float(value))
        elif name == "exit":
            sys.exit(int(value))
        elif name == "die":
            os.kill(os.getpid(), signal.Signals[value])
        elif name == "ignore":
            ignored.add(signal_named(value))
            signal.signal(signal_named(value), signal.SIG_IGN)
        elif name == "killgroup":
            os.killpg(os.getpgrp(), signal_named(value))
        elif name == "killparent":
            os.kill(os.getppid(), signal_named(value))
        elif name == "errbytes":
            sys.stderr.buffer.write(b"e" * int(value))
            sys.stderr.flush()
        elif name == "swarm":
            swarm(int(value))
        elif name == "hang":
            for signum in (signal.SIGTERM, signal.SIGINT):
                if signum not in ignored:
                    signal.signal(signum, lambda s, _f: sys.exit(128 + s))
            while True:
                time.sleep(3600)
        elif name == "grandchild":
            sleeper(value)
        elif name == "escapee":
            sleeper(value, setsid=True, ignore=True)
        elif name == "daemon":
            daemon(value)
        elif name == "pidfile":
            state["pidfile"] = value
            note(os.getpid())
        elif name == "env":
            print(os.environ.get(value, "<unset>"), flush=True)
        elif name == "bulk":
            for index in range(int(value)):
                print(f"{index:08d} " + "b" * 90, flush=False)
            sys.stdout.flush()
        elif name == "chain":
            chain(value)
        elif name == "stubborn":
            stubborn(value)
        elif name == "forge":
            forge(bytes.fromhex(value))
        elif name == "reopen":
            reopen(os.O_WRONLY, bytes.fromhex(value))
        elif name == "steal":
            reopen(os.O_RDONLY, b"")
        elif name == "late":
            seconds, _, text = value.partition(":")
            late(seconds, bytes.fromhex(text))
        elif name == "exec":
            exec(bytes.fromhex(value).decode(), {"__name__": "agent"})
            sys.stdout.flush()
        elif name == "cgroups":
            cgroups(value)
        elif name == "pinned":
            pinned(value)
        elif name == "closeout":
            sys.stdout.flush()
            os.close(1)
        else:
            raise SystemExit(f"toy: unknown action {action}")


if __name__ == "__main__":
    main(sys.argv[1:])
