"""The activities a fleet worker runs: ``thirdshift.run_session`` and ``thirdshift.host_queue``.

``run_session`` is a synchronous activity (a worker runs it on its ``activity_executor``, a
``ThreadPoolExecutor``): the session runs in a thread of its own, while the activity's thread
heartbeats its progress and watches for a cancel, which Temporal delivers through heartbeats
(and a worker shutting down): then ``sessions.cancel()`` stops the session's whole tree, and the
activity ends cancelled.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory, CancelledError

from thirdshift._environment import checked_policy
from thirdshift._json_form import record_json
from thirdshift._logs import Logs
from thirdshift._progress import to_stderr_as
from thirdshift._sessions import Sessions
from thirdshift.errors import Interrupted, SessionFailed, ThirdshiftError
from thirdshift.harness import Choice, harness_named
from thirdshift.temporal._attempts import Start, earlier_sessions, start_of
from thirdshift.temporal._beats import Beats, cut
from thirdshift.temporal._failures import application_error
from thirdshift.temporal._values import HOST_QUEUE, RUN_SESSION, SessionRequest, SessionResult

HEARTBEAT_EVERY = 5.0
"""Seconds between heartbeats while the CLI says nothing (the SDK sends at most one per 80% of
the heartbeat timeout, the latest details winning)."""
_POLL = 0.25  # how often the activity's thread looks for a cancel between heartbeats


class _Session:
    """One ``within`` block in a thread of its own: its outcome, and its ``cancel``;
    ``finished`` is called as the thread ends (to wake whoever waits for it)."""

    def __init__(
        self,
        body: Callable[[Sessions], str | None],
        open_sessions: Callable[[], Any],
        finished: Callable[[], None],
    ):
        self._body = body
        self._open = open_sessions
        self._finished = finished
        self._lock = threading.Lock()
        self._sessions: Sessions | None = None
        self._cancelled = False
        self.final_message: str | None = None
        self.error: BaseException | None = None
        self.records: tuple[dict[str, Any], ...] = ()
        self.endings: tuple[str, ...] = ()
        self.thread = threading.Thread(target=self._run, name="thirdshift-session", daemon=True)

    def _run(self) -> None:
        try:
            with self._open() as sessions:
                with self._lock:
                    self._sessions = sessions
                    cancelled = self._cancelled
                if cancelled:
                    sessions.cancel()  # a cancel that came before the block was open
                try:
                    self.final_message = self._body(sessions)
                finally:
                    self.records = tuple(record_json(r) for r in sessions.records)
                    self.endings = sessions.endings
        except BaseException as error:  # handed to the activity's thread, which raises it
            self.error = error
        finally:
            self._finished()

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            sessions = self._sessions
        if sessions is not None:
            sessions.cancel()


class SessionActivities:
    """The activities of one host: add :attr:`on_host_queue` to the worker polling
    ``host_queue`` (with your own activities: making the worktree, opening the PR) and
    :attr:`on_shared_queue` to the one polling the fleet's shared queue.

    ``logs`` is the folder of Session logs; ``env`` sets variables for every session's CLI
    (a value of ``None`` removes one), e.g. its own ``HOME`` per host; ``progress`` takes
    each progress line (default: stderr, as ``thirdshift run`` prints them);
    ``heartbeat_every`` is how often a silent session still heartbeats, in seconds.
    """

    def __init__(
        self,
        logs: Path | str,
        *,
        host_queue: str,
        env: Mapping[str, str | None] | None = None,
        progress: Callable[[str], None] | None = None,
        heartbeat_every: float = HEARTBEAT_EVERY,
    ) -> None:
        self.logs = Path(logs).expanduser()
        self.host_queue_name = host_queue
        self._env = dict(env or {})
        self._progress = progress
        self._heartbeat_every = heartbeat_every

    @property
    def on_host_queue(self) -> Sequence[Callable[..., Any]]:
        return [self.run_session]

    @property
    def on_shared_queue(self) -> Sequence[Callable[..., Any]]:
        return [self.host_queue]

    @activity.defn(name=HOST_QUEUE)
    async def host_queue(self) -> str:
        """The task queue of this host: every later session of a worktree goes there."""
        return self.host_queue_name

    @activity.defn(name=RUN_SESSION)
    def run_session(self, request: SessionRequest) -> SessionResult:
        """Run the request's session (and its Resume) here, heartbeating as it goes."""
        info = activity.info()
        start = start_of(request, info.attempt, info.heartbeat_details)
        # Temporal raises its cancel inside this thread at any line: held off to the block's
        # end, so that the session is always stopped and waited for first.
        with activity.shield_thread_cancel_exception():
            return self._run(request, start)

    def _run(self, request: SessionRequest, start: Start) -> SessionResult:
        try:
            harness = harness_named(request.harness)
            worktree = Path(request.worktree)
            choice = Choice(
                harness,
                model=request.model,
                effort=request.effort,
                extra_args=tuple(request.extra_args),
                env=tuple(self._env.items()),
                env_policy=checked_policy(request.env_policy),
                containment=cast(Any, request.containment),
            )
            logs = Logs(self.logs, request.name or worktree.resolve().name or "root")
        except (ValueError, ThirdshiftError) as error:
            raise ApplicationError(
                f"thirdshift.run_session: {error}", type=type(error).__name__, non_retryable=True
            ) from error
        beats = Beats(harness, worktree, session_id=start.resume, earlier=start.earlier)
        # Progress lines, then None once the session's thread has ended.
        lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        show = self._progress or to_stderr_as(logs.name)

        def progress(line: str) -> None:
            beats.progress(line)
            lines.put(line)
            show(line)

        options: dict[str, Any] = {
            "skills": Path(request.skills) if request.skills is not None else None,
            "progress": progress,
            "stop_grace": request.stop_grace,
            "idle_timeout": request.idle_timeout,
            "after_result_timeout": request.after_result_timeout,
            "timeout": request.timeout,
            "budget": request.budget,
            # What earlier attempts spent counts against the budget, which spans them all.
            "earlier": earlier_sessions(start.earlier),
        }

        def body(sessions: Sessions) -> str | None:
            beats.attach(sessions)
            return sessions.run_to_final_message(start.kind, start.prompt, resume=start.resume)

        session = _Session(
            body,
            lambda: Sessions.within(logs, worktree, choice, **options),
            lambda: lines.put(None),
        )
        cancelled = self._follow(session, beats, lines)
        return self._outcome(session, beats, cancelled, start.earlier)

    def _follow(
        self, session: _Session, beats: Beats, lines: queue.SimpleQueue[str | None]
    ) -> bool:
        """Heartbeat until the session's thread ends; stop it on a cancel. Whether it was."""
        session.thread.start()
        cancelled = False
        silent_for = 0.0
        timeout = activity.info().heartbeat_timeout
        # Until the stream names the session, heartbeats wait for it up to half the heartbeat
        # timeout: the SDK sends the first at once and holds later ones back (to 80% of the
        # timeout), so a first heartbeat without the id would keep it from a retry that long.
        first_wait = max(self._heartbeat_every, timeout.total_seconds() / 2 if timeout else 0)
        while True:
            try:
                ended = lines.get(timeout=_POLL) is None
            except queue.Empty:
                ended = False
                silent_for += _POLL
            else:
                while not ended and not lines.empty():  # only the newest details are ever sent
                    ended = lines.get_nowait() is None
                silent_for = self._heartbeat_every  # a line: heartbeat now (once named)
            if ended:
                break
            named = beats.session_id() is not None
            if silent_for >= (self._heartbeat_every if named else first_wait):
                activity.heartbeat(beats.details())
                silent_for = 0.0
            if not cancelled and (activity.is_cancelled() or activity.is_worker_shutdown()):
                cancelled = True
                session.cancel()
        session.thread.join()
        return cancelled

    def _outcome(
        self,
        session: _Session,
        beats: Beats,
        cancelled: bool,
        earlier: tuple[dict[str, Any], ...],
    ) -> SessionResult:
        error = session.error
        details = beats.details()
        session_id = details["session_id"]
        if error is None:
            return SessionResult(
                final_message=session.final_message,
                session_id=session_id,
                records=(*earlier, *session.records),
                endings=session.endings,
                host=self.host_queue_name,
            )
        if isinstance(error, Interrupted) and cancelled:
            activity.heartbeat(details)
            raise CancelledError("the session was cancelled; its processes were stopped")
        if isinstance(error, ThirdshiftError):
            if isinstance(error, SessionFailed) and error.retryable:
                # The next attempt reads why this one was cut off from its last heartbeat.
                activity.heartbeat({**details, "failure": cut(str(error))})
            else:
                activity.heartbeat(details)
            raise application_error(error, details) from error
        # What was asked is wrong (a watchdog within refuses, a prompt that is no text, a kind
        # that is no plain name), found only as the session starts: no retry cures it.
        if isinstance(error, ValueError | TypeError):
            activity.heartbeat(details)
            raise ApplicationError(
                f"thirdshift.run_session: {error}",
                details,
                type=type(error).__name__,
                non_retryable=True,
            ) from error
        if isinstance(error, Interrupted):
            activity.heartbeat(details)
            raise ApplicationError(
                "the session was interrupted",
                details,
                type="Interrupted",
                category=ApplicationErrorCategory.BENIGN,  # an outcome, not the worker's fault
            )
        raise error
