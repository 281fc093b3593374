"""The Resume rules, driven in-process through ScriptedOutside."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import pytest

from pytest_thirdshift import ScriptedOutside
from thirdshift import (
    Ended,
    LaterStepFailed,
    Logs,
    RateLimited,
    Sessions,
    ThirdshiftError,
    claude,
)
from thirdshift._logs import LogExists, command_stamp
from thirdshift._prompts import resume_prompt
from thirdshift.testing import ProgressLine, SessionCall

KILLED_ONE = "ended with a background task still running (cargo test), which was killed"


@pytest.fixture
def logs(tmp_path: Path) -> Logs:
    return Logs(tmp_path / "logs", "repo")


def log_of(logs: Logs, kind: str) -> Path:
    return logs.dir / f"repo-{command_stamp()}-{kind}.jsonl"


def test_a_clean_session_runs_once_and_returns_its_final_message(logs: Logs) -> None:
    outside = ScriptedOutside().ends(session_id="s1", final_message="done")
    sessions = Sessions(logs, outside)

    assert sessions.run_to_final_message("implement", "build it") == "done"

    log = log_of(logs, "implement")
    assert outside.calls == [
        SessionCall(kind="implement", resume=None, prompt="build it", log=log),
    ]
    assert sessions.last_log == log
    assert sessions.endings == ()


def test_killed_work_with_a_session_id_is_resumed_exactly_once(logs: Logs) -> None:
    outside = (
        ScriptedOutside()
        .ends(session_id="s1", killed=("cargo test",), final_message="waiting")
        .ends(session_id="s1", final_message="tests pass")
    )
    sessions = Sessions(logs, outside)

    assert sessions.run_to_final_message("implement", "build it") == "tests pass"

    first, resume = log_of(logs, "implement"), log_of(logs, "implement-resume")
    assert outside.calls == [
        SessionCall(kind="implement", resume=None, prompt="build it", log=first),
        ProgressLine(f"implement: the session {KILLED_ONE}; resuming it once"),
        SessionCall(
            kind="implement-resume",
            resume="s1",
            prompt=resume_prompt(["cargo test"]),
            log=resume,
        ),
    ]
    assert outside.sessions[1].prompt.startswith("Your background work (cargo test) was killed")
    assert sessions.last_log == resume
    assert sessions.endings == ()


def test_a_resume_that_ends_the_same_way_gets_no_second_resume(logs: Logs) -> None:
    outside = (
        ScriptedOutside()
        .ends(session_id="s1", killed=("cargo test",))
        .ends(session_id="s1", killed=("cargo test",), final_message="gave up")
    )
    sessions = Sessions(logs, outside)

    assert sessions.run_to_final_message("implement", "build it") == "gave up"

    assert [call.kind for call in outside.sessions] == ["implement", "implement-resume"]
    assert outside.progress[-1] == (
        f"implement: the Resume {KILLED_ONE}; carrying on, as it may have been abandoned"
    )
    assert sessions.endings == (f"implement session {KILLED_ONE}",)


def test_the_default_kind_says_session_once_in_endings_and_errors(
    logs: Logs, scripted_outside: ScriptedOutside
) -> None:
    scripted_outside.ends(session_id="s1", killed=("cargo test",))
    scripted_outside.ends(session_id="s1", killed=("cargo test",))

    with (
        pytest.raises(LaterStepFailed) as failure,
        Sessions.within(logs, Path("."), claude(), progress=list[str]().append) as sessions,
    ):
        sessions.run("session", "build it")
        raise RuntimeError("no PR found")

    assert failure.value.endings == (f"session {KILLED_ONE}",)
    assert str(failure.value) == f"session {KILLED_ONE}, and a later step failed: no PR found"
    # The rules' own lines keep their words.
    assert scripted_outside.progress[0] == (f"session: the session {KILLED_ONE}; resuming it once")
    assert scripted_outside.progress[-1] == (
        f"session: the Resume {KILLED_ONE}; carrying on, as it may have been abandoned"
    )


@pytest.mark.parametrize(
    ("kind", "named"),
    [
        ("session", "the session's"),
        ("review-session", "the review-session's"),
        ("fix", "the fix session's"),
    ],
)
def test_a_kind_is_named_with_session_once_when_no_log_name_is_free(
    logs: Logs, kind: str, named: str
) -> None:
    class EveryNameTaken:
        def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
            raise LogExists(log)

        def report(self, line: str) -> None: ...

        def wait(self, seconds: float) -> None: ...

        def cancel(self) -> None: ...

    with pytest.raises(ThirdshiftError) as failure:
        Sessions(logs, EveryNameTaken()).run(kind, "go")

    assert str(failure.value) == (
        f"could not find a free name for {named} log in {logs.dir}: the first 1000 are taken"
    )


def test_a_later_failing_step_names_the_killed_work_ahead_of_its_cause(
    logs: Logs, scripted_outside: ScriptedOutside
) -> None:
    scripted_outside.ends(session_id="s1", killed=("cargo test",))
    scripted_outside.ends(session_id="s1", killed=("cargo test",))
    cause = RuntimeError("no PR found")

    with (
        pytest.raises(LaterStepFailed) as failure,
        Sessions.within(logs, Path("."), claude()) as sessions,
    ):
        sessions.run("implement", "build it")
        raise cause

    assert str(failure.value) == (
        f"implement session {KILLED_ONE}, and a later step failed: no PR found"
    )
    assert failure.value.cause is cause
    assert failure.value.__cause__ is cause
    assert failure.value.endings == (f"implement session {KILLED_ONE}",)
    assert isinstance(failure.value, ThirdshiftError)


def test_killed_work_with_no_session_id_is_not_resumed(logs: Logs) -> None:
    outside = ScriptedOutside().ends(killed=("npm test",), final_message="bye")
    sessions = Sessions(logs, outside)

    assert sessions.run_to_final_message("review", "look") == "bye"

    log = log_of(logs, "review")
    ending = "ended with a background task still running (npm test), which was killed"
    assert outside.calls == [
        SessionCall(kind="review", resume=None, prompt="look", log=log),
        ProgressLine(f"review: the session {ending}; carrying on, as it may have been abandoned"),
    ]
    assert sessions.endings == (f"review session {ending}",)


def test_a_failing_session_propagates_its_error_unchanged_and_is_not_resumed(
    logs: Logs,
) -> None:
    error = ThirdshiftError("claude exited 3")
    outside = ScriptedOutside().fails(error)
    sessions = Sessions(logs, outside)

    with pytest.raises(ThirdshiftError) as raised:
        sessions.run("implement", "build it")

    assert raised.value is error
    assert [call.kind for call in outside.sessions] == ["implement"]
    assert sessions.endings == ()
    assert sessions.last_log == log_of(logs, "implement")


def test_a_failing_resume_leaves_its_own_log_as_the_last_log(logs: Logs) -> None:
    outside = ScriptedOutside().ends(session_id="s1", killed=("make",)).fails("codex exited 1")
    sessions = Sessions(logs, outside)

    with pytest.raises(ThirdshiftError, match="codex exited 1"):
        sessions.run("fix", "fix it")

    assert sessions.last_log == log_of(logs, "fix-resume")
    assert sessions.endings == ()


def test_steps_that_succeed_after_killed_work_keep_their_result(
    logs: Logs, scripted_outside: ScriptedOutside
) -> None:
    scripted_outside.ends(killed=("cargo test",))

    with Sessions.within(logs, Path("."), claude()) as sessions:
        sessions.run("implement", "build it")
        result = "merged"

    assert result == "merged"
    assert sessions.endings == (f"implement session {KILLED_ONE}",)


def test_two_sessions_with_killed_work_are_named_oldest_first(
    logs: Logs, scripted_outside: ScriptedOutside
) -> None:
    scripted_outside.ends(killed=("cargo test",))
    scripted_outside.ends(killed=("npm test", "npm run lint"))

    with (
        pytest.raises(LaterStepFailed) as failure,
        Sessions.within(logs, Path("."), claude()) as sessions,
    ):
        sessions.run("implement", "build it")
        sessions.run("review", "look")
        raise ValueError("merge refused")

    several = (
        "ended with background tasks still running (npm test; npm run lint), which were killed"
    )
    assert str(failure.value) == (
        f"implement session {KILLED_ONE}; review session {several}, "
        "and a later step failed: merge refused"
    )


@pytest.mark.parametrize(
    ("session_id", "killed", "cause"),
    [
        # A failure of the block with no killed work propagates unchanged.
        ("s1", (), ValueError("no PR found")),
        # A KeyboardInterrupt in the block is never wrapped, killed work or not.
        (None, ("cargo test",), KeyboardInterrupt()),
    ],
    ids=["a-failure-with-no-killed-work", "keyboard-interrupt-after-killed-work"],
)
def test_what_the_block_raises_propagates_unchanged(
    session_id: str | None,
    killed: tuple[str, ...],
    cause: BaseException,
    logs: Logs,
    scripted_outside: ScriptedOutside,
) -> None:
    scripted_outside.ends(session_id=session_id, killed=killed)

    with (
        pytest.raises(type(cause)) as raised,
        Sessions.within(logs, Path("."), claude()) as sessions,
    ):
        sessions.run("implement", "build it")
        raise cause

    assert raised.value is cause
    assert str(raised.value) == str(cause)


def test_an_explicit_outside_wins_over_the_fixture(
    logs: Logs, scripted_outside: ScriptedOutside
) -> None:
    explicit = ScriptedOutside().ends(final_message="explicit")

    with Sessions.within(logs, Path("."), claude(), outside=explicit) as sessions:
        assert sessions.run_to_final_message("implement", "go") == "explicit"

    assert scripted_outside.calls == []


@pytest.mark.parametrize("kind", ["a/b", "../x", "..", ".hidden", "", "a b", "-flag"])
def test_a_kind_that_is_not_a_plain_name_is_refused(logs: Logs, kind: str) -> None:
    outside = ScriptedOutside()
    sessions = Sessions(logs, outside)

    with pytest.raises(ValueError, match="not a plain name"):
        sessions.run(kind, "go")

    assert outside.calls == []


def test_log_paths_share_one_command_stamp(tmp_path: Path) -> None:
    logs = Logs(tmp_path, "repo")
    first, second = logs.path("implement"), logs.path("review")

    stamp = first.name.removeprefix("repo-").removesuffix("-implement.jsonl")
    assert second.name == f"repo-{stamp}-review.jsonl"
    assert first.parent == tmp_path
    # %Y%m%dT%H%M%S%z, e.g. 20261003T120000-0400
    assert re.fullmatch(r"\d{8}T\d{6}[+-]\d{4}", stamp)


@pytest.mark.parametrize("name", ["", "a/b", "..", "."])
def test_a_log_name_with_a_path_separator_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="log name"):
        Logs(tmp_path, name)


def test_the_resume_prompt_is_three_paragraphs_naming_the_work() -> None:
    prompt = resume_prompt(["cargo test", "npm test"])

    paragraphs = prompt.split("\n\n")
    assert len(paragraphs) == 3
    assert prompt.endswith(".\n")
    assert paragraphs[0] == (
        "Your background work (cargo test; npm test) was killed when your turn ended, "
        "because ending the turn ends the session."
    )
    assert paragraphs[1].startswith("Re-run whatever you were waiting on in the foreground")
    assert paragraphs[2].startswith("You run headless: nobody is watching")
    assert all("\n" not in p for p in paragraphs[:2])


def test_the_rules_module_imports_nothing_that_spawns_or_touches_a_terminal() -> None:
    import thirdshift._sessions as rules

    tree = ast.parse(Path(rules.__file__).read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 0
    }
    assert imported.isdisjoint(
        {"subprocess", "os", "signal", "pty", "termios", "tty", "psutil", "sys", "multiprocessing"}
    )
    top_level = {(node.module or "") for node in tree.body if isinstance(node, ast.ImportFrom)}
    assert not any(m.startswith(("thirdshift._machine", "thirdshift._wiring")) for m in top_level)


def test_ended_is_a_frozen_value() -> None:
    ended = Ended(session_id="s1", killed=("x",), final_message="m")
    with pytest.raises(AttributeError):
        ended.session_id = "s2"  # type: ignore[misc]


class QuietOutside:
    """An Outside that reports nothing of its own: what it hears came from the rules."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
        return Ended(session_id="s1")

    def report(self, line: str) -> None:
        self.lines.append(line)

    def wait(self, seconds: float) -> None:
        raise AssertionError("no API limit is hit here")

    def cancel(self) -> None:
        raise AssertionError("nothing is cancelled here")


def test_the_rules_leave_the_logging_line_to_the_outside(logs: Logs) -> None:
    # The Outside says where it logs once the session can start (a missing CLI never does).
    outside = QuietOutside()

    Sessions(logs, outside).run("implement", "build it")

    assert outside.lines == []


@pytest.mark.parametrize("budget", [-1.0, math.nan])
def test_a_limit_budget_that_is_no_duration_is_refused(logs: Logs, budget: float) -> None:
    # NaN compares false to every wait, so it would wait out every limit without end.
    with pytest.raises(ValueError, match=r"^wait_for_limits must be None or seconds, not "):
        Sessions(logs, ScriptedOutside(), wait_for_limits=budget)


def test_an_endless_limit_budget_waits_out_every_limit(logs: Logs) -> None:
    limit = RateLimited("claude exited 1: 429", session_id="s1")
    outside = ScriptedOutside().fails(limit).fails(limit).ends(session_id="s1")

    Sessions(logs, outside, wait_for_limits=math.inf).run("implement", "go")

    assert outside.waits == [60.0, 120.0]
