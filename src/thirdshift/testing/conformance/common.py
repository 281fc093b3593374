"""What every Harness's scenarios share: the session kind, the progress lines every play opens
with, and the scenarios written alike for all five CLIs (hello, a foreground command)."""

from __future__ import annotations

from thirdshift.testing.conformance.scenario import Expected, Scenario, SessionOutcome
from thirdshift.testing.conformance.steps import run, say

KIND = "task"
RESUMED = f"{KIND}: background work was killed as the session ended; resuming it once"
ENDED = f"{KIND}: session ended"


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
