"""The scripted_outside fixture as downstream test suites load it (pytester)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

DOWNSTREAM_TEST = """
from pathlib import Path

from thirdshift import Logs, Sessions, claude


def ship(logs):
    # Downstream code under test: it passes no outside=, so the fixture stands in.
    with Sessions.within(logs, Path("."), claude()) as sessions:
        return sessions.run_to_final_message("implement", "build it")


def test_ship(scripted_outside, tmp_path):
    scripted_outside.ends(session_id="s1", final_message="done")
    assert ship(Logs(tmp_path, "repo")) == "done"
    assert [call.kind for call in scripted_outside.sessions] == ["implement"]
"""

UNCONSUMED = """
import pytest


def test_leaves_script(scripted_outside):
    scripted_outside.ends(session_id="s1", final_message="never used")


@pytest.mark.thirdshift(assert_all_consumed=False)
def test_leaves_script_on_purpose(scripted_outside):
    scripted_outside.ends(session_id="s1")
"""

UNSCRIPTED = """
from pathlib import Path

from thirdshift import Logs, Sessions, claude


def test_swallows_the_error(scripted_outside, tmp_path):
    with Sessions.within(Logs(tmp_path, "repo"), Path("."), claude()) as sessions:
        try:
            sessions.run("review", "look")
        except Exception:
            pass  # downstream code that swallows errors must not hide the missing script
"""


def test_the_fixture_works_with_the_plugin_auto_loaded(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(DOWNSTREAM_TEST)

    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_the_fixture_works_with_dash_p(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(DOWNSTREAM_TEST)

    pytester.runpytest_subprocess("-p", "pytest_thirdshift").assert_outcomes(passed=1)


def test_the_fixture_works_with_autoload_disabled_and_dash_p(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(DOWNSTREAM_TEST)

    pytester.runpytest_subprocess("-p", "pytest_thirdshift").assert_outcomes(passed=1)


def test_without_the_plugin_the_fixture_is_missing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(DOWNSTREAM_TEST)

    result = pytester.runpytest_subprocess()

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'scripted_outside' not found*"])


def test_the_fixture_works_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_one=DOWNSTREAM_TEST,
        test_two=DOWNSTREAM_TEST.replace("def test_ship", "def test_ship_again"),
    )

    pytester.runpytest_subprocess("-n", "2").assert_outcomes(passed=2)


def test_an_unconsumed_script_fails_the_test_unless_the_marker_allows_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(UNCONSUMED)

    result = pytester.runpytest_subprocess()

    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_leaves_script*",
            "*scripted_outside: scripted ending never used: Ended(session_id='s1'*never used*",
            "  (a test that leaves script unused on purpose says so with "
            "@pytest.mark.thirdshift(assert_all_consumed=False))",
        ]
    )


def test_an_unscripted_session_fails_the_test_even_when_its_error_is_swallowed(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(UNSCRIPTED)

    result = pytester.runpytest_subprocess()

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*session 'review' ran without a scripted ending*"])


def test_the_marker_is_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--markers")

    result.stdout.fnmatch_lines(["@pytest.mark.thirdshift(assert_all_consumed=True)*"])


FAILS_WITH_UNUSED_SCRIPT = """
from thirdshift.testing import steps


def test_scripted_fails_before_its_session(scripted_outside):
    scripted_outside.ends(session_id="s1")
    assert 1 == 2, "the test's own failure"


def test_fake_fails_before_its_session(fake_cli_on_path):
    fake_cli_on_path.claude.script(steps.say("never said"))
    assert 1 == 2, "the test's own failure"
"""


def test_a_failing_test_gets_no_extra_teardown_error_for_unused_script(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(FAILS_WITH_UNUSED_SCRIPT)

    result = pytester.runpytest_subprocess()

    result.assert_outcomes(failed=2, errors=0)
    result.stdout.fnmatch_lines(["*the test's own failure*"])
    result.stdout.no_fnmatch_line("*never used*")


MARKER_TYPO = """
import pytest


@pytest.mark.thirdshift(assert_all_consume=False)
def test_scripted_with_a_typo(scripted_outside):
    scripted_outside.ends(session_id="s1")


@pytest.mark.thirdshift(assert_all_consume=False)
def test_fake_with_a_typo(fake_cli_on_path):
    pass


@pytest.mark.thirdshift(False)
def test_a_positional_argument():
    pass


@pytest.mark.thirdshift(assert_all_consumed="no")
def test_a_value_that_is_no_switch(scripted_outside):
    scripted_outside.ends(session_id="s1")


@pytest.mark.thirdshift(assert_all_consumed=False)
def test_spelled_right(scripted_outside):
    scripted_outside.ends(session_id="s1")
"""


def test_an_unknown_marker_argument_fails_the_test_saying_what_it_takes(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(MARKER_TYPO)

    result = pytester.runpytest_subprocess()

    result.assert_outcomes(passed=1, errors=4)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_scripted_with_a_typo*",
            "@pytest.mark.thirdshift: unknown argument assert_all_consume; "
            "it takes only assert_all_consumed= (as keywords)",
            "*ERROR at setup of test_fake_with_a_typo*",
            "@pytest.mark.thirdshift: unknown argument assert_all_consume;*",
            "*ERROR at setup of test_a_positional_argument*",
            "@pytest.mark.thirdshift: unknown argument False;*",
            "*ERROR at setup of test_a_value_that_is_no_switch*",
            "@pytest.mark.thirdshift: assert_all_consumed= takes True or False, not 'no'",
        ]
    )


BOTH_FIXTURES = """
from thirdshift.testing import steps
from thirdshift import Logs, Sessions, claude


def test_both(scripted_outside, fake_cli_on_path, tmp_path):
    scripted_outside.ends(session_id="s1", final_message="from the script")
    fake_cli_on_path.claude.script(steps.say("from the fake"))
    with Sessions.within(Logs(tmp_path, "repo"), tmp_path, claude()) as sessions:
        assert sessions.run_to_final_message("implement", "x") == "from the script"
"""


def test_a_fake_left_unused_beside_scripted_outside_is_told_why(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(BOTH_FIXTURES)

    result = pytester.runpytest_subprocess()

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*fake_cli_on_path: a script of fake claude was never used: Say(text='from the fake')",
            "  (scripted_outside is in use too: Sessions.within plays its scripted endings, "
            "and no fake CLI runs)",
        ]
    )


LEAKED_INTERRUPT = """
import signal

import pytest

from thirdshift import Logs, Sessions, claude, interrupts

STARTING_HANDLER = signal.getsignal(signal.SIGINT)


@pytest.mark.thirdshift
def test_1_requests_an_interrupt_and_installs_handlers():
    interrupts.install()
    interrupts.request()
    assert interrupts.requested()


def test_2_a_plain_test_between_them_is_left_alone():
    pass


def test_3_runs_a_session_afterwards(scripted_outside, tmp_path):
    scripted_outside.ends(session_id="s1", final_message="done")
    with Sessions.within(Logs(tmp_path, "repo"), tmp_path, claude(), progress=print) as s:
        assert s.run_to_final_message("implement", "build it") == "done"
    assert signal.getsignal(signal.SIGINT) is STARTING_HANDLER
"""


def test_an_interrupt_requested_by_one_test_does_not_reach_the_next_under_xdist(
    pytester: pytest.Pytester,
) -> None:
    # loadfile keeps both tests on one worker, in order: the leak could only happen there.
    pytester.makepyfile(test_leak=LEAKED_INTERRUPT, test_other="def test_other(): pass\n")

    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadfile")

    result.assert_outcomes(passed=4)
