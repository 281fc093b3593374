"""The words of the supervisor's protocol, and the numbers both of its ends agree on.

It imports nothing: the supervisor (run with ``-I -S``) and the adapter both import it, so
each word is defined here once.
"""

# The protocol, one ASCII line per message. Status, from the supervisor:
STARTED = "started"  # started <pid>, with the CLI's pidfd (and pid 1's under namespace)
EXIT = "exit"  # exit <wait status>: the CLI itself exited
SPAWN_ERROR = "spawn-error"  # spawn-error <reason>: the CLI could not be started
GONE = "gone"  # nothing the session started is left; the supervisor exits 0
# left <hex>: a process still running after the CLI's exit and the drain, about to be stopped;
# its command line (/proc/PID/cmdline, NUL-separated, at most LEFT_BYTES) as hex digits, so
# that nothing in it can look like a line of the protocol.
LEFT = "left"
LEFT_UNLISTED = "left-unlisted"  # left-unlisted <n>: that many more, not listed one by one
# listening <n>, first and only from a sandbox's pid 1, with n listening sockets' descriptors
# (SCM_RIGHTS): the endpoints it made in the sandbox's network, in the order asked for.
LISTENING = "listening"
# Control, from the adapter (end of file means stop, too):
STOP = "stop"  # stop signals in turn with their grace, then kill
KILL = "kill"  # kill now, even while a stop is under way
END = "end"  # end <seconds>: the session ended; wait that long, report what is left, stop it

# The containments (see docs/stopping.md), most isolated first.
CGROUP = "cgroup"
NAMESPACE = "namespace"
SCAN = "scan"
CONTAINMENTS = (CGROUP, NAMESPACE, SCAN)
PROBE = "probe-namespace"  # argv[0] that asks only whether the namespace can be made here
# A sandboxed session (see thirdshift/_machine/sandbox): the supervisor started by the adapter
# is the sandbox's outer process (argv[0] SANDBOX): it starts PROGRAM (bwrap) in the session's
# cgroups, hands it the CLI's stdio, waits for it and says "gone"; bwrap runs the supervisor
# again as the sandbox's pid 1 (argv[0] INIT), which does all the rest as under NAMESPACE.
SANDBOX = "sandbox"
INIT = "init"

CHANNEL_FD = 3  # the adapter's socket
# The cgroup folders the CLI joins, from here on (their count is in argv); under the cgroup
# containment the first is the session's own, which the supervisor watches and kills.
CGROUP_FD = 4
# In a sandbox's pid 1: the socket on which the outer process hands over the CLI's stdio (the
# sandbox's outer bwrap process keeps every descriptor it was started with until the end, so
# the stream must not be one of them).
STDIO_FD = 4
# No line of the protocol is longer than this (a `left` line of LEFT_BYTES as hex, and room).
MAX_LINE = 4096
# What is reported of the work left running: at most this many processes, each by at most this
# much of its command line (the adapter shortens descriptions to far less).
LEFT_LISTED = 100
LEFT_BYTES = 1024
# A process that ignores every signal but SIGKILL still dies; this only bounds waiting for
# an uninterruptible (D state) process to let go after SIGKILL.
KILL_WAIT_SECONDS = 30.0
PIDFD_SIGNAL_PROCESS_GROUP = 4  # pidfd_send_signal: the pidfd's process group (Linux 6.9)
