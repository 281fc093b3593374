"""What the plugin's fixtures say at teardown, in-process (pytester inline): one failure for one
problem, and the fixture that plays named."""

from __future__ import annotations

import pytest

UNSCRIPTED = """
from pathlib import Path

from thirdshift import Logs, Sessions, claude


def test_lets_it_fail_the_test(scripted_outside, tmp_path):
    with Sessions.within(Logs(tmp_path, "repo"), tmp_path, claude()) as sessions:
        sessions.run("review", "look")


def test_swallows_it(scripted_outside, tmp_path):
    try:
        with Sessions.within(Logs(tmp_path, "repo"), tmp_path, claude()) as sessions:
            sessions.run("review", "look")
    except AssertionError:
        pass
"""


def test_an_unscripted_session_is_one_failure_and_a_swallowed_one_is_told_at_teardown(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(UNSCRIPTED)

    result = pytester.runpytest("-p", "no:cacheprovider")

    # The first: its own failure, no teardown error besides. The second: the teardown's.
    result.assert_outcomes(passed=1, failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_swallows_it*",
            "*scripted_outside: session 'review' ran without a scripted ending*",
        ]
    )
    assert "ERROR at teardown of test_lets_it_fail_the_test" not in result.stdout.str()


BOTH = """
def test_both(scripted_outside, fake_cli_on_path):
    pass
"""


def test_a_test_with_both_scripted_outside_and_the_fakes_is_told_which_plays(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(BOTH)

    result = pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*fake_cli_on_path and scripted_outside are both in use: Sessions.within in this "
            "test plays scripted_outside's endings, and the fake CLIs play only for the "
            "processes the test starts itself (thirdshift run, subprocess)*"
        ]
    )
