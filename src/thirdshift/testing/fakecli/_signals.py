"""The signals a fake CLI handles, and the two ways it meets them: waiting, and dying.

SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 (:data:`HANDLED`) are recorded as they
arrive; each ends the call (:class:`Stop`) unless a ``hang`` step said to ignore it.
"""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

HANDLED = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)


class Stop(BaseException):
    """Ends the call at once, stopped by ``signo`` (raised by a signal handler)."""

    def __init__(self, signo: int) -> None:
        super().__init__(signo)
        self.signo = signo


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold our signals off: a handler must not run while the state or a record is written."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def wait_for_signals(timeout: float | None) -> None:
    """Wait until a signal's handler raises (or ``timeout`` passes), letting each run.

    A signal landing just before the wait began still ends it at once: the signal module
    writes each one to a wakeup pipe, which the wait watches.
    """
    wakeup, wake = os.pipe()
    os.set_blocking(wake, False)
    previous = signal.set_wakeup_fd(wake)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while deadline is None or time.monotonic() < deadline:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if select.select([wakeup], [], [], left)[0]:
                os.read(wakeup, 512)  # the handler has run (and raised, unless ignored)
    finally:
        signal.set_wakeup_fd(previous)
        os.close(wakeup)
        os.close(wake)


def die_by_signal(signo: signal.Signals) -> NoReturn:
    """Die by ``signo`` as a process without a handler for it dies."""
    signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)  # nothing of ours may run now
    if signo not in (signal.SIGKILL, signal.SIGSTOP):  # those cannot be handled anyway
        signal.signal(signo, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signo])
    os.kill(os.getpid(), signo)
    time.sleep(1.0)  # a signal whose default is to be ignored: die anyway
    os._exit(128 + signo)
