"""The conformance scenarios of the built-in Harnesses, Claude Code and Codex.

Each pins a behaviour of the real CLI that thirdshift's reader and Resume rules rely on; the
comments say which. The expected outcomes are what the pinned CLIs (Claude Code 2.1.197, Codex
0.171.0) show under the fake model, and what the fake CLIs must show too.
"""

from __future__ import annotations

from dataclasses import replace

from thirdshift._progress import duration
from thirdshift._watchdogs import Watchdogs
from thirdshift.testing._steps import (
    background,
    edit,
    load_skill,
    say,
)
from thirdshift.testing.conformance._common import (
    CLAUDE_GRACE,
    KIND,
    auth_failed,
    background_killed,
    foreground,
    hello,
    interrupt,
    lines,
    resumed,
)
from thirdshift.testing.conformance._normalise import SESSION
from thirdshift.testing.conformance._scenario import Expected, Scenario, SessionOutcome
from thirdshift.testing.fakemodel._environment import CODEX_PROVIDER

NOTIFIED = "The background command finished."
"""What the agent says in Claude's task-notification turn; the fake claude always says this."""
AFTER_RESULT_TIMEOUT = 2.0
"""The after-result watchdog of the scenario that cuts Claude's ~5 s grace short."""
SKILL = "---\nname: greet\ndescription: Greets people by name.\n---\nGreet Ada by name.\n"

_RESUME_ARGV = {
    "claude": (
        "claude",
        "-p",
        "--permission-mode",
        "auto",
        "--output-format",
        "stream-json",
        "--verbose",
        "--resume",
        SESSION,
    ),
    "codex": (
        "codex",
        "exec",
        "--json",
        "--dangerously-bypass-approvals-and-sandbox",
        "--skip-git-repo-check",
        "resume",
        SESSION,
        "-",
    ),
}
_SKILL_LINE = {"claude": "skill greet", "codex": "$ cat .agents/skills/greet/SKILL.md"}
# Each CLI's own retries of a 401, cut to one so that the failure comes soon (by default
# Claude 2.1.197 retries it 10 times with back-off, 3 min; Codex 0.171.0 5 times): the one
# retry must get the 401 again, as from the real API.
_ONE_RETRY: dict[str, tuple[tuple[str, str], ...]] = {
    "claude": (("CLAUDE_CODE_MAX_RETRIES", "1"),),
    "codex": (),
}
_ONE_RETRY_ARGS = {
    "claude": (),
    "codex": (
        "-c",
        f"model_providers.{CODEX_PROVIDER}.request_max_retries=1",
        "-c",
        f"model_providers.{CODEX_PROVIDER}.stream_max_retries=0",
    ),
}
# What the stream said last before the 401 failed the session: its record keeps it.
_AUTH_FINAL_MESSAGE = {
    "claude": "Failed to authenticate. API Error: 401 the key is not valid",
    "codex": None,
}
_AUTH_MESSAGE = {
    "claude": "claude exited 1: Failed to authenticate. API Error: 401 the key is not valid",
    "codex": (
        "codex exited 1: unexpected status 401 Unauthorized: the key is not valid, "
        "url: http://127.0.0.1:<port>/v1/responses"
    ),
}
_EDIT_LINE = {"claude": "Write notes.txt", "codex": "Add notes.txt"}


def scenarios_of(harness: str) -> tuple[Scenario, ...]:
    """The built-in scenarios of ``claude`` or ``codex``, in the order ``thirdshift check`` runs
    them."""
    ended = f"{KIND}: session ended"
    resume = f"{KIND}-resume"
    started_resume = ("logging the session to <log>", f"{resume}: session started")
    killed = background_killed(harness, _RESUME_ARGV[harness], "sleep 300")
    return (
        hello(harness),
        foreground(harness),
        Scenario(
            "edit",
            "a file edit",
            harness,
            ((edit("notes.txt", "edited\n"), say("Edited.")),),
            Expected(
                sessions=(SessionOutcome(KIND, (), "Edited."),),
                progress=lines(f"{KIND}: {_EDIT_LINE[harness]}", ended),
                files=(("notes.txt", "edited\n"),),
            ),
            pins="the CLI's edit tool writes the file, shown as one line naming it",
        ),
        killed,
        *_cut_short(killed),
        _finishes_within_grace(harness),
        Scenario(
            "resume-killed-again",
            "Resume killed again → carry on",
            harness,
            (
                (background("sleep 300"), say("Started the tests.")),
                (background("sleep 301"), say("Started them again.")),
            ),
            Expected(
                sessions=(
                    SessionOutcome(KIND, ("sleep 300",), "Started the tests."),
                    SessionOutcome(resume, ("sleep 301",), "Started them again."),
                ),
                progress=(
                    *lines("task: $ sleep 300", ended, resumed("sleep 300")),
                    *started_resume,
                    f"{resume}: $ sleep 301",
                    f"{resume}: session ended",
                    f"{KIND}: the Resume ended with a background task still running (sleep 301), "
                    "which was killed; carrying on, as it may have been abandoned",
                ),
                resume_argv=_RESUME_ARGV[harness],
                resume_same_session=True,
            ),
            pins=(
                "a Resume of the same id whose background work is killed again is reported the "
                "same way; there is no second Resume"
            ),
        ),
        auth_failed(
            harness,
            _AUTH_MESSAGE[harness],
            _AUTH_FINAL_MESSAGE[harness],
            env=_ONE_RETRY[harness],
            extra_args=_ONE_RETRY_ARGS[harness],
        ),
        Scenario(
            "skill",
            "a skill copied in is loaded",
            harness,
            ((load_skill("greet"), say("Greeted.")),),
            Expected(
                sessions=(SessionOutcome(KIND, (), "Greeted."),),
                progress=lines(f"{KIND}: {_SKILL_LINE[harness]}", ended),
                agent_saw=("Greet Ada by name.",),
            ),
            skills=(("greet", SKILL),),
            pins=(
                "the CLI finds a skill copied into its skills folder and hands its body to the "
                "agent"
            ),
        ),
        interrupt(harness, "sleep 300"),
    )


def _cut_short(killed: Scenario) -> tuple[Scenario, ...]:
    """Claude only (Codex exits as its turn ends: nothing to cut short): the after-result
    watchdog stops Claude while it waits out its grace, with the work still running."""
    if killed.harness != "claude":
        return ()
    expected = killed.expected
    limit = AFTER_RESULT_TIMEOUT
    stopped = (
        f"{KIND}: claude was still running {duration(limit)} after its result; stopped it, "
        "the result stands"
    )
    progress = list(expected.progress)
    progress.insert(progress.index(resumed("sleep 300")), stopped)
    return (
        Scenario(
            "background-cut-short",
            "background killed by the after-result watchdog → one Resume",
            killed.harness,
            killed.sessions,
            replace(expected, progress=tuple(progress)),
            watchdogs=Watchdogs(after_result=limit),
            stops=True,
            pins=(
                "Claude stopped (SIGTERM) while it waits out its grace reports the work it "
                "kills on its way out: the result stands, the work counts as killed, one Resume"
            ),
        ),
    )


def _finishes_within_grace(harness: str) -> Scenario:
    ended = f"{KIND}: session ended"
    if harness == "claude":
        # Claude waits ~5 s after its result; work done by then is reported `completed` and
        # taken up in a turn of its own (`origin: task-notification`), whose result is the
        # final message. Nothing was killed: no Resume.
        return Scenario(
            "background-finishes",
            "background finishes within the grace → no Resume",
            harness,
            ((background("sleep 1", grace=CLAUDE_GRACE), say("Started the tests.")),),
            Expected(
                sessions=(SessionOutcome(KIND, (), NOTIFIED),),
                progress=lines("task: $ sleep 1", ended),
            ),
            notified=NOTIFIED,
            pins=(
                "Claude waits ~5 s after its result; work done by then is reported completed "
                "and taken up in a task-notification turn, and nothing is killed"
            ),
        )
    # Codex has no grace: whatever still runs when the turn ends is killed as Codex exits,
    # however soon it would have finished, and so it is resumed. (`sleep 4`: Codex returns
    # from the command after 1 s, and its turn must end before the command does, even on a
    # busy machine.)
    return Scenario(
        "background-finishes",
        "background that would finish soon is killed → one Resume",
        harness,
        ((background("sleep 4", grace=CLAUDE_GRACE), say("Started the tests.")), (say("Done."),)),
        Expected(
            sessions=(
                SessionOutcome(KIND, ("sleep 4",), "Started the tests."),
                SessionOutcome(f"{KIND}-resume", (), "Done."),
            ),
            progress=(
                *lines("task: $ sleep 4", ended, resumed("sleep 4")),
                "logging the session to <log>",
                f"{KIND}-resume: session started",
                f"{KIND}-resume: session ended",
            ),
            resume_argv=_RESUME_ARGV[harness],
            resume_same_session=True,
        ),
        pins="Codex has no grace: work still running as its turn ends is killed",
    )
