"""The two ways of playing a scenario: on a fake CLI, or on the real CLI under the fake model.

A player stages a scenario in a folder: it scripts the agent's side and hands the runner the
environment that makes ``Sessions.within`` reach the CLI it plays, and afterwards what only it
can tell (each call's argv, the signals received, what reached the agent, what went wrong).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from thirdshift._programs import find_program
from thirdshift._sandbox import WRITE_HOOK
from thirdshift.errors import CLINotFound
from thirdshift.harness import Choice, harness_named
from thirdshift.testing import fakecli, fakemodel
from thirdshift.testing._steps import Background, LoadSkill, Say, Step, say
from thirdshift.testing._wire import CLAUDE_TMP_ENV
from thirdshift.testing.conformance._common import CLAUDE_GRACE
from thirdshift.testing.conformance._others import opencode_job
from thirdshift.testing.conformance._scenario import Scenario
from thirdshift.testing.fakecli._steps import emit
from thirdshift.testing.fakemodel._environment import API_KEY_ENV, claude_tmp

FAKE_CLIS = ("claude", "codex", "opencode", "gemini", "qwen")
"""The CLIs :mod:`~thirdshift.testing.fakecli` fakes."""

_CALL = "\x1e"  # starts each call in the argv file; the arguments follow, NUL-ended


class Stage(Protocol):
    """A scenario staged for one play."""

    @property
    def env(self) -> Mapping[str, str | None]:
        """What the play changes in ``os.environ`` (None: removes), to reach the CLI it plays.

        ``os.environ`` and not the Choice's ``env``, since the CLI is looked up on thirdshift's
        own ``PATH``."""
        ...

    def argvs(self) -> list[tuple[str, ...]]:
        """The argv of each call of the CLI, in order, the program's name first."""
        ...

    def stop_signals(self) -> tuple[str, ...] | None:
        """The signals the CLI received, in order; None where that cannot be observed."""
        ...

    def shown(self) -> str:
        """Everything that reached the agent: prompts, tool results."""
        ...

    def problems(self, *, unused: bool = True) -> list[str]:
        """What went wrong with the play itself: a call or request that found no script, and
        (if ``unused``) script left unplayed."""
        ...

    def before_session(self, number: int) -> None:
        """Called as session ``number`` (0: the first; a Resume counts) is about to start, the
        CLI of the one before it gone."""
        ...


class Player(Protocol):
    name: str
    """``fake`` or ``real``."""

    def stage(self, scenario: Scenario, folder: Path) -> contextlib.AbstractContextManager[Stage]:
        """Script ``scenario`` under ``folder``; the context ends the play's helpers."""
        ...


def _changed(env: Mapping[str, str]) -> dict[str, str | None]:
    """What ``env`` sets differently from ``os.environ``, and what it drops (None)."""
    changed: dict[str, str | None] = {
        name: value for name, value in env.items() if os.environ.get(name) != value
    }
    changed.update({name: None for name in os.environ if name not in env})
    return changed


# The fake CLI


def fake_script(
    harness: str,
    steps: tuple[Step, ...],
    skills: Mapping[str, str] | None = None,
    worktree: Path | None = None,
    *,
    lingers: bool = False,
) -> list[Step]:
    """The fake CLI's script for one session of ``steps``: the steps themselves, but for what
    the real CLI under the fake model shows and the fake does not. ``skills`` maps each skill
    copied in (into ``worktree``) to its ``SKILL.md``. ``lingers``: the fake claude waits out
    the real one's grace even for work that will not finish in it (else it kills that work at
    once, which shows the same sooner), for a play whose ``after_result`` watchdog comes first."""
    played: list[Step] = []
    for step in steps:
        shown = step
        if isinstance(shown, Background) and lingers:
            shown = dataclasses.replace(shown, grace=CLAUDE_GRACE)
        if isinstance(shown, Background) and harness == "opencode":
            # The job the real opencode is given (the fake adds " &").
            job = opencode_job(shown.command).removesuffix(" &")
            shown = dataclasses.replace(shown, command=job)
        played.append(shown)
        if (
            isinstance(step, LoadSkill)
            and harness == "claude"
            and worktree is not None
            and step.name in (skills or {})
        ):
            assert skills is not None
            played.append(emit(_claude_skill_text(step.name, skills[step.name], worktree)))
    return played


def _claude_skill_text(name: str, text: str, worktree: Path) -> dict[str, Any]:
    """The synthetic user message in which the real Claude hands the agent a skill's body,
    right after the ``Skill`` tool's "Launching skill" result; the fake claude leaves it out."""
    body = text.split("\n---\n", 1)[1] if text.startswith("---\n") and "\n---\n" in text else text
    where = worktree / ".claude" / "skills" / name
    return {
        "type": "user",
        "message": {
            "role": "user",
            "content": [
                {"type": "text", "text": f"Base directory for this skill: {where}\n\n{body}"}
            ],
        },
        "parent_tool_use_id": None,
        "isSynthetic": True,
    }


def program_of(harness: str) -> str:
    """The program the Harness named ``harness`` runs (``claude``, ``codex``)."""
    chosen = harness_named(harness)
    return chosen.invocation(Choice(chosen), None, "").argv[0]


class _FakeStage:
    def __init__(self, fakes: fakecli.FakeCLIs, harness: str, home: Path) -> None:
        self._fakes = fakes
        self._cli = fakes.harness(harness)
        # A HOME of the play's own, as the real play has: what a fake keeps there (Qwen's
        # status files) is then this play's alone, whatever else runs at once. A key and
        # Claude's temporary folder as the real play has them: Claude's init says where its key
        # came from, and its tool results name the folder.
        as_real = {API_KEY_ENV: "thirdshift-fake-cli", CLAUDE_TMP_ENV: str(claude_tmp(home))}
        self.env = _changed({**fakes.env(), "HOME": str(home), **as_real})

    def argvs(self) -> list[tuple[str, ...]]:
        return [tuple(call.argv) for call in self._cli.calls]

    def stop_signals(self) -> tuple[str, ...] | None:
        return tuple(signal for call in self._cli.calls for signal in call.signals)

    def shown(self) -> str:
        return "\n".join(
            (call.stdin or "") + call.stdout.decode("utf-8", "replace") for call in self._cli.calls
        )

    def problems(self, *, unused: bool = True) -> list[str]:
        return self._fakes.problems(include_unconsumed=unused)

    def before_session(self, number: int) -> None:
        """Nothing: every fake call's script was queued as the play was staged."""


class FakePlayer:
    """Plays scenarios on thirdshift's fake CLIs (:mod:`fakecli`): ``claude``, ``codex``,
    ``opencode``, ``gemini`` and ``qwen``."""

    name = "fake"

    @contextlib.contextmanager
    def stage(self, scenario: Scenario, folder: Path) -> Iterator[Stage]:
        if scenario.harness not in FAKE_CLIS:
            raise CLINotFound(scenario.harness, f"there is no fake {scenario.harness} CLI")
        fakes = fakecli.FakeCLIs.create(folder / "fakecli")
        home = folder / "home"
        home.mkdir(mode=0o700, exist_ok=True)
        claude_tmp(home).mkdir(mode=0o700, exist_ok=True)
        skills, worktree = dict(scenario.skills), folder / "worktree"
        limit = scenario.watchdogs.after_result
        lingers = limit is not None and limit < CLAUDE_GRACE
        for session in scenario.sessions:
            script = fake_script(scenario.harness, session, skills, worktree, lingers=lingers)
            fakes.harness(scenario.harness).script(*script)
        try:
            yield _FakeStage(fakes, scenario.harness, home)
        finally:
            fakes.kill_survivors()


# The real CLI under the fake model


_ARGV_LOGGER = """\
#!/bin/sh
# Logs each call's argv for thirdshift's conformance run, then is the real {name}.
{{ printf '\\036'; printf '%s\\0' "$0" "$@"; }} >> '{argv_file}'
exec '{real}' "$@"
"""


def argv_logger(bin_dir: Path, name: str, real: str, argv_file: Path) -> None:
    """A ``name`` in ``bin_dir`` that appends its argv to ``argv_file`` and execs ``real``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for text in (real, str(argv_file)):
        if "'" in text:
            raise CLINotFound(name, f"cannot log the calls of {text!r}: its path holds a quote")
    program = bin_dir / name
    program.write_text(
        _ARGV_LOGGER.format(name=name, argv_file=argv_file, real=real), encoding="utf-8"
    )
    program.chmod(stat.S_IRWXU)


def logged_argvs(argv_file: Path, name: str) -> list[tuple[str, ...]]:
    """The argv of each logged call, the program's name as ``name``."""
    try:
        data = argv_file.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        return []
    calls = []
    for chunk in data.split(_CALL)[1:]:
        argv = chunk.split("\0")[:-1]
        calls.append((name, *argv[1:]))
    return calls


class _RealStage:
    """Scripts each session as it starts: Claude stopped by a watchdog may start a turn of its
    own (it tells the model its task was stopped, and runs what it is answered) before it
    exits. Answered from the next session's script, that turn would take the Resume's steps;
    so it is answered with the session's own last words, and that answer is withdrawn, unused,
    when the next session starts."""

    def __init__(
        self,
        model: fakemodel.FakeModel,
        side: fakemodel.ScriptedModel,
        env: Mapping[str, str],
        argv_file: Path,
        program: str,
        *,
        scenario: Scenario,
    ) -> None:
        self._model = model
        self._side = side
        self.env = _changed(env)
        self._argv_file = argv_file
        self._program = program
        self._scenario = scenario
        self._may_go_unused = False
        """Whether the last script queued answers a turn that may not come."""

    def _withdraw_unused(self) -> None:
        if self._may_go_unused:  # queued last: the turn it answers did not come
            self._side.withdraw()
            self._may_go_unused = False

    def before_session(self, number: int) -> None:
        scenario = self._scenario
        self._withdraw_unused()
        # A Resume of an id the CLI never made asks the model nothing.
        if scenario.resume is not None or number >= len(scenario.sessions):
            return
        session = scenario.sessions[number]
        self._side.script(*session)
        left_running = [step for step in session if isinstance(step, Background)]
        if any(step.grace > 0 for step in left_running) and scenario.notified is not None:
            self._side.script(say(scenario.notified))  # its task-notification turn
        limit = scenario.watchdogs.after_result
        said = [step.text for step in session if isinstance(step, Say)]
        if left_running and limit is not None and limit < CLAUDE_GRACE and said:
            self._side.script(say(said[-1]))  # the turn it may start as it is stopped
            self._may_go_unused = True

    def argvs(self) -> list[tuple[str, ...]]:
        return logged_argvs(self._argv_file, self._program)

    def stop_signals(self) -> tuple[str, ...] | None:
        return None  # the real CLI keeps no record of them

    def shown(self) -> str:
        texts = []
        for request in self._side.requests:
            texts.append(request.user_text or "")
            texts += request.tool_results
        return "\n".join(texts)

    def problems(self, *, unused: bool = True) -> list[str]:
        self._withdraw_unused()
        found = self._model.problems(include_unconsumed=unused)
        return [f"the fake model: {problem}" for problem in found]


class RealPlayer:
    """Plays scenarios on the real CLI found on PATH, against :class:`FakeModel` on loopback.

    The CLI runs with ``HOME`` and ``CODEX_HOME`` in the play's folder and a dummy key: it reads
    no credentials or settings of the user's, and reaches nothing but 127.0.0.1.
    """

    name = "real"

    @contextlib.contextmanager
    def stage(self, scenario: Scenario, folder: Path) -> Iterator[Stage]:
        program = program_of(scenario.harness)
        real = str(find_program(program))  # CLINotFound, saying why, when it is not there
        with fakemodel.FakeModel() as model:
            side: fakemodel.ScriptedModel = getattr(model, scenario.model_api)
            env = model.env(folder / "home")
            bin_dir, argv_file = folder / "argv-logger", folder / "calls" / "calls.argv"
            argv_file.parent.mkdir()
            argv_logger(bin_dir, program, real, argv_file)
            env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
            env[WRITE_HOOK] = str(argv_file.parent)  # a sandboxed play logs its argv there too
            yield _RealStage(model, side, env, argv_file, program, scenario=scenario)
