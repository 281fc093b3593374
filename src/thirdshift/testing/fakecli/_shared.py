"""What a call takes from the state it shares with the test and the other calls, under its lock.

Its number, its script, and its session id: a new one (:func:`new_session_id`), counted among
the calls of its fake that give an id, or the id it was asked to resume.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from thirdshift.testing.fakecli import _steps as steps
from thirdshift.testing.fakecli._argv import Argv
from thirdshift.testing.fakecli._state import HARNESSES, QUEUES_IN

"""What each CLI resumes: any id (Codex), only the ids it made, or only those made in the cwd."""


def new_session_id(harness: str, number: int) -> str:
    """The ``number``-th new session id of ``harness``, shaped like the real CLI's ids."""
    if harness in ("gemini", "qwen"):  # real ones are UUIDs
        return f"00000000-0000-4000-8000-{number:012d}"
    prefix = {"claude": "fake-session-", "codex": "fake-thread-", "opencode": "ses_fake"}
    return f"{prefix[harness]}{number}"


@dataclass(frozen=True)
class Taken:
    """What a call takes from the shared state, under its lock."""

    number: int
    script: tuple[steps.Step, ...] | None
    """Its script; None if none was left, or its argv was refused."""
    session_id: str | None = None
    replay: list[dict[str, Any]] = field(default_factory=list)
    """Tasks killed at the end of the session's last call (Claude replays them)."""
    resume_refused: bool = False
    sessions_here: bool = False
    """Whether this fake made any session in the call's cwd (Gemini words a refusal by it)."""
    record_env: tuple[str, ...] = ()
    copy_output: bool = True
    skills_dir: str = ""
    """The CLI's project skills folder, relative to its cwd (its Harness's)."""
    elsewhere: tuple[str, ...] = ()
    """Where scripts wait that this call could not take, when it took none (see
    :func:`waiting_elsewhere`)."""


def waiting_elsewhere(harness: str, state: dict[str, Any], cwd: str) -> tuple[str, ...]:
    """Where the scripts queued in ``state`` wait, that a call of ``harness`` in ``cwd`` cannot
    take: ``fake codex`` (another CLI's), ``fake claude in /path`` (another worktree's)."""
    found = []
    for name in HARNESSES:
        queues = state[name].get(QUEUES_IN, {})
        if name != harness and (state[name]["queue"] or any(queues.values())):
            found.append(f"fake {name}")
        found += [
            f"fake {name} in {folder}"
            for folder, scripts in queues.items()
            if scripts and (name == harness and folder != cwd)
        ]
    return tuple(found)


def take(harness: str, state: dict[str, Any], argv: Argv, cwd: str, resumes: str) -> Taken:
    """Take the call's number, script and session id from ``state`` (changing it); a Resume
    may name the sessions ``resumes`` says (its profile's)."""
    mine = state[harness]
    mine["calls"] += 1
    settings = {
        "record_env": tuple(state["record_env"]),
        "copy_output": state["copy_output"],
        "skills_dir": state["skills_dirs"][harness],
    }
    here = mine.get(QUEUES_IN, {}).get(cwd) or []
    if argv.refused is not None:
        return Taken(mine["calls"], None, **settings)
    if not (here or mine["queue"]):
        elsewhere = waiting_elsewhere(harness, state, cwd)
        return Taken(mine["calls"], None, elsewhere=elsewhere, **settings)
    queued = here.pop(0) if here else mine["queue"].pop(0)
    script = tuple(steps.Step.from_json(step) for step in queued)
    verbs = {step.verb for step in script}
    explicit = next((step.value for step in script if isinstance(step, steps.SessionId)), None)
    sessions = state["sessions"]
    replay: list[dict[str, Any]] = []
    refused, session_id, sessions_here = False, None, False
    if argv.resume is not None:
        known = sessions.get(argv.resume)
        if resumes != "any id":
            refused = known is None or known["harness"] != harness
            refused = refused or (resumes == "cwd" and known["cwd"] != cwd)
            replay = [] if refused else known.pop("killed", [])
        sessions_here = any(
            made["harness"] == harness and made["cwd"] == cwd for made in sessions.values()
        )
        session_id = argv.resume if explicit is None else explicit
    elif "no_session_id" not in verbs:
        if explicit is None:  # numbered among the sessions that have an id
            mine["sessions"] += 1
            explicit = new_session_id(harness, mine["sessions"])
        session_id = explicit
        sessions[session_id] = {"harness": harness, "cwd": cwd, "killed": []}
    if "no_session_id" in verbs:
        session_id = None
    return Taken(mine["calls"], script, session_id, replay, refused, sessions_here, **settings)
