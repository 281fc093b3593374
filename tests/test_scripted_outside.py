"""ScriptedOutside on its own, without the fixture."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_thirdshift import ScriptedOutside, UnscriptedSession
from thirdshift import Ended, ThirdshiftError


def test_endings_are_played_in_turn_and_calls_recorded(tmp_path: Path) -> None:
    outside = ScriptedOutside().ends(session_id="a").ends(session_id="b", final_message="m")

    first = outside.run_session("one", None, "p1", tmp_path / "1.jsonl")
    outside.report("a line")
    second = outside.run_session("two", "a", "p2", tmp_path / "2.jsonl")

    assert first == Ended(session_id="a")
    assert second == Ended(session_id="b", final_message="m")
    assert [call.kind for call in outside.sessions] == ["one", "two"]
    assert outside.sessions[1].resume == "a"
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
