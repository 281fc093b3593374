"""The activities a fleet worker runs: ``thirdshift.run_session`` and ``thirdshift.host_queue``.

``run_session`` is a synchronous activity (a worker runs it on its ``activity_executor``, a
``ThreadPoolExecutor``): the session runs in a thread of its own, while the activity's thread
heartbeats its progress and watches for a cancel, which Temporal delivers through heartbeats
(and a worker shutting down): then ``sessions.cancel()`` stops the session's whole tree, and the
activity ends cancelled. Before anything runs, the request is held to the worker's policy
(:mod:`thirdshift.temporal._policy`).
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory, CancelledError

from thirdshift._containment import checked_containment
from thirdshift._environment import checked_policy
from thirdshift._json_form import record_json
from thirdshift._logs import Logs
from thirdshift._progress import to_stderr_as
from thirdshift._prompts import AS_ASKED
from thirdshift._sessions import Sessions
from thirdshift.errors import Interrupted, ResumeTargetMissing, SessionFailed, ThirdshiftError
from thirdshift.harness import harness_named
from thirdshift.harness._base import made_choice
from thirdshift.temporal._at_once import AtOnce
from thirdshift.temporal._attempts import Start, earlier_sessions, start_of
from thirdshift.temporal._beats import WAITING, Beats, cut
from thirdshift.temporal._failures import application_error, limits_unsaid
from thirdshift.temporal._lost import lost_session, recorded
from thirdshift.temporal._policy import WorkerPolicy, refusal, sandbox_for
from thirdshift.temporal._values import HOST_QUEUE, RUN_SESSION, SessionRequest, SessionResult

if TYPE_CHECKING:
    from temporalio.client import Client

HEARTBEAT_EVERY = 5.0
"""Seconds between heartbeats, however many lines the CLI writes meanwhile (the SDK sends at most
one per 80% of the heartbeat timeout, the latest details winning)."""
_POLL = 0.25  # how often the activity's thread looks for a cancel between heartbeats

SERVER_LOST = (
    "the Temporal server could not be reached: it no longer knows this attempt (no heartbeat "
    "reached it within the heartbeat timeout, or the workflow ended meanwhile)"
)
TAKEN_OVER = (
    "the Temporal server could not be reached: it timed this attempt out (no heartbeat reached "
    "it within the heartbeat timeout), and a later attempt takes the session over"
)


def temporal_of(info: activity.Info, host: str) -> dict[str, Any]:
    """Where an attempt runs, as each of its records says it."""
    return {
        "workflow_id": info.workflow_id,
        "run_id": info.workflow_run_id,
        "activity_id": info.activity_id,
        "attempt": info.attempt,
        "host": host,
    }


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
        # Run in the context it was made in (the activity's), so that whatever it holds reaches
        # the block: the activity's span, under Temporal's tracing interceptor, is its parent.
        self.thread = threading.Thread(
            target=contextvars.copy_context().run,
            args=(self._run,),
            name="thirdshift-session",
            daemon=True,
        )

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


def _sink(tag: str, progress: Callable[[str], None] | None) -> Callable[[str], None]:
    """Where a run's lines go, tagged ``[<log name> <workflow id>]``."""
    if progress is None:
        return to_stderr_as(tag)
    return lambda line: progress(f"[{tag}] {line}")


class _Lines:
    """The session's progress lines: to the heartbeats, to the activity's thread (woken by
    each, to tell the server at once of a session id the line's stream named), and to the
    worker's own sink, each tagged with the run's log name and
    its workflow id (two worktrees of one name on a host read apart). Once the session is
    stopped for a reason the adapter cannot know (the server gone), its stop line says it."""

    def __init__(
        self,
        beats: Beats,
        tag: str,
        progress: Callable[[str], None] | None,
    ) -> None:
        self._beats = beats
        self.queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        """Progress lines, then ``None`` once the session's thread has ended."""
        self._show = _sink(tag, progress)
        self.why: str | None = None

    def __call__(self, line: str) -> None:
        why = self.why
        if why is not None and f", {AS_ASKED};" in line:
            line = line.replace(f", {AS_ASKED};", f": {why};")
        self._beats.progress(line)
        self.queue.put(line)
        self._show(line)

    def report(self, line: str) -> None:
        """A line of the activity's own."""
        self._show(line)


class SessionActivities:
    """The activities of one host: add :attr:`on_host_queue` to the worker polling
    ``host_queue`` (with your own activities: making the worktree, opening the PR) and
    :attr:`on_shared_queue` to the one polling the fleet's shared queue.

    ``logs`` is the folder of Session logs; ``host_queue`` this host's own task queue, which
    ``thirdshift.host_queue`` answers (default: the queue it ran on, so that one worker polling
    one queue is a host of its own); ``env`` sets variables for every session's CLI (a value
    of ``None`` removes one), e.g. its own ``HOME`` per host; ``progress`` takes each progress
    line, tagged ``[<log name> <workflow id>]`` (default: stderr, as ``thirdshift run`` prints
    them); ``heartbeat_every`` is how often a session heartbeats, in seconds, however many
    lines it writes; ``policy`` is what a request may ask for (:class:`WorkerPolicy`; by
    default no ``extra_args``); ``client``, the worker's, sends the heartbeat that names a
    session at once, past the SDK's throttle (without one, it waits for the SDK's next
    heartbeat).
    """

    def __init__(
        self,
        logs: Path | str,
        *,
        host_queue: str | None = None,
        env: Mapping[str, str | None] | None = None,
        progress: Callable[[str], None] | None = None,
        heartbeat_every: float = HEARTBEAT_EVERY,
        policy: WorkerPolicy | None = None,
        client: Client | None = None,
    ) -> None:
        self.logs = Path(logs).expanduser()
        self.host_queue_name = host_queue
        self._env = dict(env or {})
        self._progress = progress
        self._heartbeat_every = heartbeat_every
        self.policy = policy if policy is not None else WorkerPolicy()
        self.at_once = AtOnce(client)
        self._lock = threading.Lock()
        self._attempts: dict[tuple[str | None, str | None, str], tuple[_Session, _Lines]] = {}
        """The attempt of each activity running here, to stop before a later one starts."""

    @property
    def on_host_queue(self) -> Sequence[Callable[..., Any]]:
        return [self.run_session]

    @property
    def on_shared_queue(self) -> Sequence[Callable[..., Any]]:
        return [self.host_queue]

    @activity.defn(name=HOST_QUEUE)
    async def host_queue(self) -> str:
        """The task queue of this host: every later session of a worktree goes there."""
        return self.host_queue_name or activity.info().task_queue

    @activity.defn(name=RUN_SESSION)
    def run_session(self, request: SessionRequest) -> SessionResult:
        """Run the request's session (and its Resume) here, heartbeating as it goes."""
        info = activity.info()
        start = start_of(request, info.attempt, info.heartbeat_details)
        # Temporal raises its cancel inside this thread at any line: held off to the block's
        # end, so that the session is always stopped and waited for first.
        with activity.shield_thread_cancel_exception():
            return self._run(request, start, info)

    def _run(self, request: SessionRequest, start: Start, info: activity.Info) -> SessionResult:
        refused = refusal(self.policy, request)
        if refused is not None:
            raise ApplicationError(
                f"thirdshift.run_session: {refused}", type="RequestRefused", non_retryable=True
            )
        try:
            harness = harness_named(request.harness)
            worktree = Path(request.worktree)
            policy = request.env_policy
            choice = made_choice(
                harness,
                request.model,
                request.effort,
                tuple(request.extra_args),
                env=self._env,
                env_policy=None if policy is None else checked_policy(policy),
                containment=checked_containment(request.containment),
                sandbox=sandbox_for(self.policy, request),
            )
            logs = Logs(self.logs, request.name or worktree.resolve().name or "root")
        except (ValueError, ThirdshiftError) as error:
            raise ApplicationError(
                f"thirdshift.run_session: {error}", type=type(error).__name__, non_retryable=True
            ) from error
        host = self.host_queue_name or info.task_queue
        temporal = temporal_of(info, host)
        tag = f"{logs.name} {info.workflow_id or info.activity_id}"
        key = (info.workflow_id, info.workflow_run_id, info.activity_id)
        earlier = (*start.earlier, *self._take_over(key, start.earlier))
        lost = lost_session(start.lost, self.logs)
        if lost is not None:
            earlier = (*earlier, recorded(lost, _sink(tag, self._progress)))
        beats = Beats(
            harness, worktree, session_id=start.resume, earlier=earlier, temporal=temporal
        )
        lines = _Lines(beats, tag, self._progress)
        options: dict[str, Any] = {
            "skills": Path(request.skills) if request.skills is not None else None,
            "progress": lines,
            "watchdogs": request.watchdogs,
            "budget": request.budget,
            # What earlier attempts spent counts against the budget, which spans them all.
            "earlier": earlier_sessions(earlier),
            "temporal": temporal,
        }

        def body(sessions: Sessions) -> str | None:
            beats.attach(sessions)
            try:
                return sessions.run_to_final_message(start.kind, start.prompt, resume=start.resume)
            except ResumeTargetMissing as missing:
                again = start.again
                if again is None or missing.session_id not in (None, start.resume):
                    raise
                # The CLI never kept the session its lost worker ran: the work is to do again.
                lines.report(f"{start.kind}: {missing}; running the request again")
                return sessions.run_to_final_message(again.kind, again.prompt, resume=again.resume)

        session = _Session(
            body,
            lambda: Sessions.within(logs, worktree, choice, **options),
            lambda: lines.queue.put(None),
        )
        with self._lock:
            self._attempts[key] = (session, lines)
        try:
            cancelled = self._follow(session, beats, lines, info)
        finally:
            with self._lock:
                if self._attempts.get(key, (None,))[0] is session:
                    del self._attempts[key]
        return self._outcome(session, beats, cancelled, earlier, host)

    def _take_over(
        self, key: tuple[str | None, str | None, str], earlier: tuple[dict[str, Any], ...]
    ) -> tuple[dict[str, Any], ...]:
        """Stop an earlier attempt of the same activity still running here, and wait for it:
        the server timed it out while no heartbeat reached it (a server restarted), and two
        CLIs must never run one session. The records of its sessions that ``earlier`` (what
        its heartbeats told the server) lacks."""
        with self._lock:
            found = self._attempts.pop(key, None)
        if found is None:
            return ()
        session, lines = found
        lines.why = TAKEN_OVER
        session.cancel()
        session.thread.join()
        known = {record.get("log") for record in earlier}
        return tuple(record for record in session.records if record["log"] not in known)

    def _follow(self, session: _Session, beats: Beats, lines: _Lines, info: activity.Info) -> bool:
        """Heartbeat until the session's thread ends; stop it on a cancel. Whether it was.

        A heartbeat goes out at the first line, then at most once every ``heartbeat_every``
        (a third of the heartbeat timeout, if less), with the newest details: lines or silence,
        the server hears of the attempt well within its timeout, and a burst of lines costs
        one heartbeat, not one each (each builds the details and hands them to the SDK's event
        loop to convert, which the SDK throttles to one send a window anyway: a fleet of busy
        sessions spent most of its CPU on them, bench/RESULTS.md). The one that first names a
        session's id goes out at once, also past the SDK's throttle, through the client
        (:mod:`thirdshift.temporal._at_once`), so that a worker lost a moment later has its
        session continued by id.
        """
        session.thread.start()
        cancelled = False
        told: str | None = None  # the id the server was last told at once
        beaten: float | None = None  # when the last heartbeat went out
        every = self._heartbeat_every
        if info.heartbeat_timeout:  # the SDK always holds a fresh heartbeat to send
            every = min(every, info.heartbeat_timeout.total_seconds() / 3)
        while True:
            try:
                ended = lines.queue.get(timeout=_POLL) is None
            except queue.Empty:
                ended = False
            else:
                while not ended and not lines.queue.empty():  # only the newest details are sent
                    ended = lines.queue.get_nowait() is None
            if ended:
                break
            now = time.monotonic()
            named = beats.session_id()
            if named is not None and named != told:
                details = beats.details()
                activity.heartbeat(details)
                self.at_once.send(info.task_token, details)
                told, beaten = named, now
            elif beaten is None or now - beaten >= every:
                activity.heartbeat(beats.details())
                beaten = now
            if not cancelled and (activity.is_cancelled() or activity.is_worker_shutdown()):
                cancelled = True
                why = activity.cancellation_details()
                if why is not None and (why.not_found or why.timed_out):
                    lines.why = SERVER_LOST
                beats.stopping()
                session.cancel()
        session.thread.join()
        return cancelled

    def _outcome(
        self,
        session: _Session,
        beats: Beats,
        cancelled: bool,
        earlier: tuple[dict[str, Any], ...],
        host: str,
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
                host=host,
            )
        if isinstance(error, Interrupted) and cancelled:
            activity.heartbeat(details)
            raise CancelledError("the session was cancelled; its processes were stopped")
        if isinstance(error, ThirdshiftError):
            if isinstance(error, SessionFailed) and error.retryable:
                # The next attempt reads why this one was cut off from its last heartbeat.
                details = beats.details(failure=cut(str(error)), phase=WAITING)
            activity.heartbeat(details)
            unsaid = limits_unsaid(details["records"][:-1])
            policy = activity.info().retry_policy
            longest = policy.maximum_interval if policy is not None else None
            raise application_error(error, details, unsaid_before=unsaid, longest=longest) from None
        # What was asked is wrong (a watchdog within refuses, a prompt that is no text, a kind
        # that is no plain name), found only as the session starts: no retry cures it.
        if isinstance(error, ValueError | TypeError):
            activity.heartbeat(details)
            raise ApplicationError(
                f"thirdshift.run_session: {cut(str(error))}",
                details,
                type=type(error).__name__,
                non_retryable=True,
            ) from None
        if isinstance(error, Interrupted):
            activity.heartbeat(details)
            raise ApplicationError(
                "the session was interrupted",
                details,
                type="Interrupted",
                category=ApplicationErrorCategory.BENIGN,  # an outcome, not the worker's fault
            )
        raise error
