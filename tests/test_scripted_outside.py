"""ScriptedOutside on its own, without the fixture."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_thirdshift import ScriptedOutside
from thirdshift import (
    Ended,
    Interrupted,
    Logs,
    Sessions,
    ThirdshiftError,
    claude,
    codex,
    interrupts,
)
from thirdshift.testing import UnscriptedSession, default_outside
from thirdshift.testing.waits import instant_waits

KILLED = "ended with a background task still running (cargo test), which was killed"


def test_endings_are_played_in_turn_and_calls_recorded(tmp_path: Path) -> None:
    outside = ScriptedOutside().ends(session_id="a").ends(session_id="b", final_message="m")

    first = outside.run_session("one", None, "p1", tmp_path / "1.jsonl")
    outside.report("a line")
    second = outside.run_session("two", "a", "p2", tmp_path / "2.jsonl")

    assert first == Ended(session_id="a")
    assert second == Ended(session_id="b", final_message="m")
    assert [call.kind for call in outside.sessions] == ["one", "two"]
    assert outside.sessions[1].resume == "a"
    # No "logging the session to" line: a stand-in writes no log (the real adapter does).
    assert outside.progress == ["a line"]
    assert len(outside.calls) == 3
    assert outside.unconsumed == []
    assert outside.problems() == []


def test_a_string_failure_becomes_a_thirdshift_error(tmp_path: Path) -> None:
    outside = ScriptedOutside().fails("claude exited 3")

    with pytest.raises(ThirdshiftError, match=r"^claude exited 3$"):
        outside.run_session("one", None, "p", tmp_path / "1.jsonl")


def test_an_exception_failure_is_raised_as_it_is(tmp_path: Path) -> None:
    error = OSError("disk full")
    outside = ScriptedOutside().fails(error)

    with pytest.raises(OSError, match="disk full") as raised:
        outside.run_session("one", None, "p", tmp_path / "1.jsonl")

    assert raised.value is error


def test_an_unscripted_session_names_its_kind_and_is_remembered(tmp_path: Path) -> None:
    outside = ScriptedOutside()

    with pytest.raises(UnscriptedSession, match="session 'review' ran, but no ending"):
        outside.run_session("review", None, "p", tmp_path / "1.jsonl")

    assert outside.problems() == ["session 'review' ran without a scripted ending"]


def test_unused_script_is_reported_unless_excluded() -> None:
    outside = ScriptedOutside().ends(session_id="left")

    assert outside.problems() == [
        "scripted ending never used: "
        "Ended(session_id='left', killed=(), final_message=None, usage=None)"
    ]
    assert outside.problems(include_unconsumed=False) == []


def test_within_hands_progress_to_the_callers_progress_and_still_records_it(
    tmp_path: Path,
) -> None:
    outside = ScriptedOutside().ends(session_id="s1", killed=("cargo test",)).ends()
    heard: list[str] = []
    logs = Logs(tmp_path / "logs", "repo")

    with Sessions.within(logs, tmp_path, claude(), outside=outside, progress=heard.append) as s:
        s.run("implement", "build it")

    assert heard == outside.progress
    assert heard == [
        f"implement: the session {KILLED}; resuming it once",
    ]


def test_within_records_the_choice_and_the_worktree_of_each_session(tmp_path: Path) -> None:
    outside = ScriptedOutside().ends().ends()
    review = codex(model="gpt-5.5", effort="high")
    logs = Logs(tmp_path / "logs", "repo")

    with Sessions.within(logs, tmp_path / "a", claude(), outside=outside, progress=print) as s:
        s.run("implement", "build it")
    with Sessions.within(logs, tmp_path / "b", review, outside=outside, progress=print) as s:
        s.run("review", "look")

    implement, reviewed = outside.sessions
    assert (implement.choice, implement.worktree) == (claude(), tmp_path / "a")
    assert (reviewed.choice, reviewed.worktree) == (review, tmp_path / "b")


def test_the_default_outside_is_bound_per_within_too(tmp_path: Path) -> None:
    outside = ScriptedOutside().ends()
    heard: list[str] = []

    with (
        default_outside(outside),
        Sessions.within(Logs(tmp_path, "repo"), tmp_path, codex(), progress=heard.append) as s,
    ):
        s.run("review", "look")

    assert outside.sessions[0].choice == codex()
    assert heard == outside.progress


def test_instant_waits_on_top_of_a_default_outside_leave_the_stand_in_playing(
    tmp_path: Path,
) -> None:
    outside = ScriptedOutside().ends()
    heard: list[str] = []

    with (
        default_outside(outside),
        instant_waits() as waits,
        Sessions.within(Logs(tmp_path, "repo"), tmp_path, codex(), progress=heard.append) as s,
    ):
        s.run("review", "look")

    assert [call.kind for call in outside.sessions] == ["review"]
    assert waits.seconds == []


def test_a_bare_scripted_outside_records_no_context(tmp_path: Path) -> None:
    outside = ScriptedOutside().ends()

    Sessions(Logs(tmp_path, "repo"), outside).run("implement", "build it")

    assert (outside.sessions[0].choice, outside.sessions[0].worktree) == (None, None)


def skills_folder(tmp_path: Path, *names: str) -> Path:
    skills = tmp_path / "skills"
    for name in names:
        (skills / name).mkdir(parents=True)
        (skills / name / "SKILL.md").write_text("---\nname: x\n---\n")
    return skills


def test_with_a_scripted_outside_skills_are_checked_but_nothing_is_linked_or_spawned(
    tmp_path: Path,
) -> None:
    # A worktree's .git as `git init` leaves it, as far as skills could touch it; a `git`
    # spawned for the shared exclude would fail the test (tests/ starts no process).
    worktree = tmp_path / "worktree"
    exclude = worktree / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True)
    exclude.write_text("# git ls-files --others --exclude-from=.git/info/exclude\n")
    skills = skills_folder(tmp_path, "implement")
    outside = ScriptedOutside().ends()

    with Sessions.within(
        Logs(tmp_path, "repo"), worktree, claude(), skills=skills, outside=outside, progress=print
    ) as s:
        s.run("implement", "build it")

    assert sorted(path.name for path in worktree.iterdir()) == [".git"]
    assert exclude.read_text() == "# git ls-files --others --exclude-from=.git/info/exclude\n"


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda tmp: tmp / "missing", "could not read skills folder"),
        (lambda tmp: skills_folder(tmp, "bad name"), "skill name 'bad name' is not a plain name"),
    ],
    ids=["unreadable", "not-plain"],
)
def test_with_a_scripted_outside_bad_skills_are_refused_as_in_production(
    tmp_path: Path, make: Callable[[Path], Path], error: str
) -> None:
    outside = ScriptedOutside().ends()

    with (
        pytest.raises(ThirdshiftError, match=error),
        Sessions.within(
            Logs(tmp_path, "repo"), tmp_path, claude(), skills=make(tmp_path), outside=outside
        ),
    ):
        pass
    assert outside.calls == []


def test_after_an_interrupt_a_session_is_refused_as_the_real_adapter_refuses_it(
    tmp_path: Path,
) -> None:
    outside = ScriptedOutside().ends()

    with interrupts.isolated():
        interrupts.request()
        with pytest.raises(Interrupted):
            outside.run_session("implement", None, "p", tmp_path / "1.jsonl")

    assert not interrupts.requested()
    assert outside.calls == []
