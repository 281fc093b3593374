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

CHANNEL_FD = 3  # the adapter's socket
CGROUP_FD = 4  # the session's cgroup folder, under the cgroup containment
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
