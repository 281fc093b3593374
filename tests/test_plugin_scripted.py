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
