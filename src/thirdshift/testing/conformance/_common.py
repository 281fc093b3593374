"""What every Harness's scenarios share: the session kind, the progress lines every play opens
with, and the scenarios written alike for all five CLIs (hello, a foreground command, an
interrupt)."""

from __future__ import annotations

from thirdshift.testing._steps import background, http_error, run, say
from thirdshift.testing.conformance._scenario import Expected, Scenario, SessionOutcome

KIND = "task"
ENDED = f"{KIND}: session ended"
STOPPED = f"{KIND}: session stopped"  # by an interrupt or a cancel
CLAUDE_GRACE = 5.0
"""Seconds Claude Code waits after its ``result`` before it kills background work (observed);
``background(command, grace=CLAUDE_GRACE)`` is work that ends within it."""


def resumed(killed: str) -> str:
    """The rules' line as they resume a session whose background work ``killed`` was killed."""
    return (
        f"{KIND}: the session ended with a background task still running ({killed}), which was "
        "killed; resuming it once"
    )


_STOP_SIGNALS = {
    "claude": ("SIGTERM",),
    "codex": ("SIGINT",),
    "opencode": ("SIGTERM",),
    "gemini": ("SIGTERM",),
    "qwen": ("SIGINT",),
}


def lines(*bodies: str, kind: str = KIND) -> tuple[str, ...]:
    """The progress lines of a play: its log line, ``session started``, then ``bodies``."""
    return ("logging the session to <log>", f"{kind}: session started", *bodies)


def hello(harness: str) -> Scenario:
    return Scenario(
        "hello",
        "hello",
        harness,
        ((say("Hello."),),),
        Expected(sessions=(SessionOutcome(KIND, (), "Hello."),), progress=lines(ENDED)),
        pins="the stream gives a session id and a final message, and the CLI exits 0",
    )


def foreground(harness: str) -> Scenario:
    return Scenario(
        "foreground",
        "a foreground command",
        harness,
        ((run("echo made > made.txt"), say("Made it.")),),
        Expected(
            sessions=(SessionOutcome(KIND, (), "Made it."),),
            progress=lines(f"{KIND}: $ echo made > made.txt", ENDED),
            files=(("made.txt", "made\n"),),
        ),
        pins="the CLI's shell tool runs the command in the worktree, shown as one `$ command` line",
    )


def interrupt(harness: str, command: str, *, shown: bool = True) -> Scenario:
    """Ctrl-C while ``command`` runs in the foreground; ``shown``: whether the CLI shows the
    command as it starts (opencode prints a tool only once it has ended)."""
    return Scenario(
        "interrupt",
        "Ctrl-C in a long command → Interrupted",
        harness,
        ((run(command), say("Slept.")),),
        Expected(
            # Recorded, stopped, with the id its stream gave (to continue it by).
            sessions=(SessionOutcome(KIND),),
            progress=lines(f"{KIND}: $ {command}", STOPPED) if shown else lines(STOPPED),
            failure="Interrupted",
            failure_message="interrupted",
            stop_signals=_STOP_SIGNALS[harness],
        ),
        interrupt_on="sleep",
        stops=True,
        pins=(
            "an interrupt stops the CLI with its stop signals, and the supervisor's whole-tree "
            "stop ends everything it started, the foreground command too (opencode and Gemini "
            "run it in a session of its own and leave it running)"
        ),
    )


def background_killed(harness: str, resume_argv: tuple[str, ...], shown: str) -> Scenario:
    """Background work left running → seen as killed → one Resume of the same session id.

    Claude reports the kill after its result (task_updated killed, task_notification
    stopped); Codex leaves the command's item in_progress at turn.completed; opencode, Gemini
    and Qwen say nothing of it in their streams, and the supervisor sees the work still running
    after the CLI exited (issue 11, item 2; Qwen kills its own and records it ``cancelled`` in
    its status files). ``shown``: how the CLI shows the command as it starts it.
    """
    resume = f"{KIND}-resume"
    return Scenario(
        "background-killed",
        "background killed → one Resume",
        harness,
        ((background("sleep 300"), say("Started the tests.")), (run("true"), say("All green."))),
        Expected(
            sessions=(
                SessionOutcome(KIND, ("sleep 300",), "Started the tests."),
                SessionOutcome(resume, (), "All green."),
            ),
            progress=(
                *lines(f"{KIND}: $ {shown}", ENDED, resumed("sleep 300")),
                "logging the session to <log>",
                f"{resume}: session started",
                f"{resume}: $ true",
                f"{resume}: session ended",
            ),
            resume_argv=resume_argv,
            resume_same_session=True,
        ),
        pins=(
            "background work left running at the end of the turn is seen as killed (the CLI "
            "reports it, or the supervisor sees it left running), and a Resume of the same id "
            "is accepted and continues that session"
        ),
    )


def auth_failed(
    harness: str,
    failure_message: str,
    final_message: str | None = None,
    *,
    env: tuple[tuple[str, str], ...] = (),
    extra_args: tuple[str, ...] = (),
) -> Scenario:
    """The API answers 401 → ``AuthFailed``, with the CLI's own wording (``failure_message``;
    ``final_message``: what its stream said last, which the record keeps). ``env`` and
    ``extra_args`` cut the CLI's own retries of it, where it makes any."""
    return Scenario(
        "auth-failed",
        "API 401 → AuthFailed",
        harness,
        ((http_error(401, message="the key is not valid"),),),
        Expected(
            sessions=(SessionOutcome(KIND, (), final_message),),
            progress=lines(ENDED),
            failure="AuthFailed",
            failure_message=failure_message,
        ),
        env=env,
        extra_args=extra_args,
        pins="a 401 from the API ends the session failed, with the CLI's own wording of it",
    )
