"""A process-wide interrupt that stops every running session, in any thread.

The library installs no signal handler unless asked: :func:`install` routes SIGINT, SIGTERM and
SIGHUP to :func:`request`, which records the interrupt and at once tells every running session
to stop (each session's supervisor then stops its processes with the Harness's stop signals).
Sessions started after that raise :class:`~thirdshift.errors.Interrupted` without spawning.

Without :func:`install`, Ctrl-C raises ``KeyboardInterrupt`` in the main thread as usual, and a
session running there stops on it; sessions in other threads are not told. Programs that run
sessions in threads should call :func:`install` from the main thread.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

# Re-entrant: the handler runs in the main thread, possibly while that thread holds the lock.
_lock = threading.RLock()
_requested = threading.Event()
_stoppers: dict[int, tuple[Callable[[], None], Callable[[], None] | None]] = {}
_next_id = iter(range(1, 1 << 62))

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals :func:`install` handles: each stops every running session."""


def install() -> None:
    """Route SIGINT, SIGTERM and SIGHUP to :func:`request`. Call from the main thread.

    Elsewhere it raises ``RuntimeError`` saying so: Python runs signal handlers in the main
    thread only.
    """
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError(
            "thirdshift.interrupts.install() must be called from the main thread, where Python "
            "handles signals; from another thread, stop sessions with interrupts.request()"
        )
    for signum in SIGNALS:
        signal.signal(signum, _on_signal)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    request()


def request() -> None:
    """Record an interrupt and tell every running session to stop; another, once one was
    recorded (a second Ctrl-C), tells them to kill their processes now, skipping what is left
    of the stop signals' grace."""
    again = _requested.is_set()
    _requested.set()
    with _lock:
        stoppers = list(_stoppers.values())
    for stop, kill in stoppers:
        (kill if again and kill is not None else stop)()


def requested() -> bool:
    """Whether an interrupt has been recorded."""
    return _requested.is_set()


def clear() -> None:
    """Forget a recorded interrupt (for long-lived programs and tests that carry on after one)."""
    _requested.clear()


@contextlib.contextmanager
def stopping(stop: Callable[[], None], *, kill: Callable[[], None] | None = None) -> Iterator[None]:
    """While active, an interrupt calls ``stop`` (at once, if one was recorded already), and
    each one after it calls ``kill`` (``stop`` again where there is none)."""
    with _lock:
        key = next(_next_id)
        _stoppers[key] = (stop, kill)
    try:
        if requested():
            stop()
        yield
    finally:
        with _lock:
            del _stoppers[key]


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    """Run a block as if no interrupt had happened, and leave none behind it.

    The recorded interrupt is cleared on entry and on exit, and the handlers of :data:`SIGNALS`
    are put back as they were (when called from the main thread, the only one that can set
    them), undoing an :func:`install` in the block. The pytest plugin runs every test in one,
    so a test's :func:`request` cannot stop the next test's sessions.
    """
    in_main_thread = threading.current_thread() is threading.main_thread()
    saved = {signum: signal.getsignal(signum) for signum in SIGNALS} if in_main_thread else {}
    clear()
    try:
        yield
    finally:
        clear()
        for signum, handler in saved.items():
            if handler is not None:  # None: set from outside Python, cannot be put back
                signal.signal(signum, handler)


__all__ = [
    "SIGNALS",
    "clear",
    "install",
    "isolated",
    "request",
    "requested",
    "stopping",
]
