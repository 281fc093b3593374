"""What the two fakes share: the call's context, and the steps each dialect must play.

A dialect (:mod:`.claude`, :mod:`.codex`) turns each step into its CLI's events, doing the step's
effect for real in between (running the command, writing the file, starting the process).
"""

from __future__ import annotations

import os

from .output import Output
from .procs import Task

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class Stop(BaseException):
    """Ends the call at once with ``code`` (raised by a signal handler, or by a step)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class Context:
    """One call, as a dialect sees it."""

    def __init__(
        self,
        *,
        harness: str,
        number: int,
        cwd: str,
        tasks_dir: str,
        out: Output,
        session_id: str | None,
        model: str | None,
        started: Callable[[int, int | None, str, str], None],
        remember_killed: Callable[[list[dict[str, Any]]], None],
    ) -> None:
        self.harness = harness
        self.number = number
        self.cwd = cwd
        self.tasks_dir = tasks_dir
        self.out = out
        self.session_id = session_id
        self.model = model
        self.started = started
        """Record a process a step started: ``started(pid, start_time, what, command)``."""
        self.remember_killed = remember_killed
        """Keep the background tasks killed at the end for a later Resume of this session."""

    def path(self, path: str) -> str:
        """``path`` made absolute against the session's cwd."""
        return os.path.normpath(os.path.join(self.cwd, path))


class Dialect:
    """The steps every fake plays; each subclass emits its own CLI's events for them."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.tasks: list[Task] = []

    def start_task(self, command: str, description: str, grace: float) -> Task:
        """Start ``command`` in the background, recorded, its output in the tasks folder."""
        output = os.path.join(
            self.ctx.tasks_dir, f"{self.ctx.harness}-{self.ctx.number:04d}-{len(self.tasks)}.out"
        )
        task = Task(command, description, grace, self.ctx.cwd, output)
        self.tasks.append(task)
        self.ctx.started(task.pid, task.start, "background", command)
        return task

    def stop_background(self) -> None:
        """Kill every background task still running, saying nothing (as on a stop)."""
        for task in self.tasks:
            if not task.finished:
                task.kill()

    def write_file(self, path: str, text: str) -> tuple[str, bool]:
        """Write ``text`` to ``path`` (under cwd if relative); return it absolute, and if new."""
        target = self.ctx.path(path)
        created = not os.path.exists(target)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as file:
            file.write(text)
        return target, created

    # The steps; see thirdshift.testing.fakecli.steps for what each means.

    def begin(self) -> None:
        raise NotImplementedError

    def refuse_resume(self, session_id: str) -> int:
        """Fail as the CLI does when it cannot resume ``session_id``; return the exit code."""
        raise NotImplementedError

    def run(self, command: str, description: str | None) -> None:
        raise NotImplementedError

    def edit(self, path: str, text: str) -> None:
        raise NotImplementedError

    def load_skill(self, name: str) -> None:
        raise NotImplementedError

    def background(self, command: str, description: str | None, grace: float) -> None:
        raise NotImplementedError

    def say(self, text: str) -> None:
        raise NotImplementedError

    def codex_error(self, message: str) -> None:
        raise NotImplementedError

    def fail_turn(self, message: str, api_error_status: int | None) -> None:
        """End the turn as failed."""
        raise NotImplementedError

    def end_turn(self) -> None:
        """End the turn as the CLI does on success, background work included."""
        raise NotImplementedError
