"""The conformance suite's own parts: comparing outcomes, normalising, logging argv, the hook,
and ``thirdshift check`` for a plugin Harness with no scenarios."""

from __future__ import annotations

import dataclasses
import json
import signal
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from thirdshift import Choice
from thirdshift._cli import main
from thirdshift._cli.check import sandbox_line
from thirdshift._machine.allowed import allowed
from thirdshift.harness import ClaudeReader, Harness, Invocation, hookimpl
from thirdshift.harness._registry import register, registry, unregister
from thirdshift.testing.conformance import (
    Expected,
    Observed,
    Scenario,
    SessionOutcome,
    differences,
    scenarios,
)
from thirdshift.testing.conformance._normalise import progress_line
from thirdshift.testing.steps import say

EXPECTED = Expected(
    sessions=(
        SessionOutcome("task", ("sleep 300",), "Started."),
        SessionOutcome("task-resume", (), "Green."),
    ),
    progress=("task: session started", "task: $ sleep 300", "task: session ended"),
    resume_argv=("claude", "-p", "--resume", "<session>"),
    resume_same_session=True,
    stop_signals=("SIGTERM",),
    files=(("a.txt", "a\n"),),
    agent_saw=("the skill",),
)
AGREES = Observed(
    sessions=EXPECTED.sessions,
    progress=EXPECTED.progress,
    resume_argv=EXPECTED.resume_argv,
    resume_same_session=True,
    failure=None,
    failure_message=None,
    stop_signals=("SIGTERM",),
    files=(("a.txt", "a\n"),),
    agent_saw=("the skill",),
    leftovers=(),
)


def test_an_outcome_as_expected_has_no_differences() -> None:
    assert differences(EXPECTED, AGREES) == []


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"resume_argv": None}, "the Resume was not started"),
        (
            {"progress": ("task: session started", "task: session ended")},
            "progress line 2: expected 'task: $ sleep 300', got 'task: session ended'",
        ),
        ({"resume_same_session": False}, "the Resume did not continue the same session id"),
        (
            {"failure": "AuthFailed", "failure_message": "claude exited 1: no"},
            "the failure: expected none, got AuthFailed (claude exited 1: no)",
        ),
        ({"stop_signals": ("SIGINT",)}, "the stop signals: expected SIGTERM, got SIGINT"),
        ({"files": (("a.txt", None),)}, "file a.txt: expected 'a\\n', got None"),
        ({"agent_saw": ()}, "the agent was never shown 'the skill'"),
        ({"leftovers": ("42 sleep 300",)}, "still running after the run: 42 sleep 300"),
        ({"problems": ("the fake model: a script was never used",)}, "the fake model: a script"),
        (
            {"sessions": (SessionOutcome("task", (), "Started."),)},
            "session task: killed work: expected sleep 300, got none",
        ),
        (
            {"sessions": (SessionOutcome("task", (), "Started."),)},
            "sessions: expected 2 (task, task-resume), got 1 (task)",
        ),
        (
            {"sessions": (EXPECTED.sessions[0], SessionOutcome("task-resume", (), "Red."))},
            "session task-resume: final message: expected 'Green.', got 'Red.'",
        ),
    ],
)
def test_each_difference_is_said_in_words(change: dict[str, object], said: str) -> None:
    found = differences(EXPECTED, dataclasses.replace(AGREES, **change))  # type: ignore[arg-type]

    assert any(difference.startswith(said) for difference in found), found


def test_signals_that_cannot_be_observed_are_not_compared() -> None:
    assert differences(EXPECTED, dataclasses.replace(AGREES, stop_signals=None)) == []


def test_progress_lines_lose_the_play_s_folder_ids_port_times_and_usage(tmp_path: Path) -> None:
    ids = ["3f1c0e62-aaaa-bbbb-cccc-0123456789ab"]

    assert progress_line(f"logging the session to {tmp_path}/logs/x.jsonl", tmp_path, ids) == (
        "logging the session to <log>"
    )
    assert progress_line("task: session ended after 5s: 2 turns, $0.0003", tmp_path, ids) == (
        "task: session ended"
    )
    assert progress_line(f"task: $ cat {tmp_path}/a", tmp_path, ids) == "task: $ cat <folder>/a"
    assert progress_line(f"resuming {ids[0]} on 127.0.0.1:41389", tmp_path, ids) == (
        "resuming <session> on 127.0.0.1:<port>"
    )


@dataclass(frozen=True)
class ToyHarness(Harness):
    """A plugin Harness of a made-up CLI (``sh`` stands in for its program)."""

    name: str = "toy"
    stop_signals: ClassVar[tuple[signal.Signals, ...]] = ()
    skills_dir: ClassVar[str] = ".toy/skills"

    def invocation(
        self, choice: Choice, resume: str | None, prompt: str, skills: Sequence[str] = ()
    ) -> Invocation:
        return Invocation(argv=("sh",), stdin=prompt)

    def reader(self, worktree: Path) -> ClaudeReader:
        return ClaudeReader(worktree)


TOY_SCENARIO = Scenario(
    "hello",
    "hello",
    "toy",
    ((say("Hello."),),),
    Expected(sessions=(SessionOutcome("task", (), "Hello."),), progress=()),
    api="claude",
)


class ToyPlugin:
    def __init__(self, offered: list[Scenario]) -> None:
        self.offered = offered

    @hookimpl
    def thirdshift_harnesses(self) -> list[object]:
        return [ToyHarness()]

    @hookimpl
    def thirdshift_conformance_scenarios(self) -> list[Scenario]:
        return self.offered


def test_a_plugin_offers_scenarios_for_its_harness_through_the_hook() -> None:
    manager = registry(entry_points=False)
    manager.register(ToyPlugin([TOY_SCENARIO]))

    assert scenarios("toy", manager) == (TOY_SCENARIO,)
    assert [scenario.harness for scenario in scenarios("claude", manager)] == ["claude"] * 10


@pytest.fixture
def toy_without_scenarios() -> Iterator[None]:
    plugin = ToyPlugin([])
    register(plugin)
    yield
    unregister(plugin)


@pytest.mark.usefixtures("toy_without_scenarios")
def test_check_on_a_harness_without_scenarios_says_nothing_was_checked_and_fails(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", "--harness", "toy"]) == 1

    here = allowed()
    assert capsys.readouterr().out == (
        f"containment: {here[0]} (this machine allows {', '.join(here)})\n"
        f"{sandbox_line(None)}\n"
        "toy  no conformance scenarios\n0 scenarios: nothing was checked\n"
    )


@pytest.mark.usefixtures("toy_without_scenarios")
def test_check_json_on_a_harness_without_scenarios_fails(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", "--harness", "toy", "--json"]) == 1

    shown = json.loads(capsys.readouterr().out)
    assert (shown["scenarios"], shown["without_scenarios"]) == ([], ["toy"])
