"""Which tests the plugin isolates from interrupts: thirdshift's (a fixture or a marker) only."""

from __future__ import annotations

import pytest

INNER = """
import signal

import pytest

from thirdshift import interrupts


def handler(signum, frame):
    pass


def test_a_plain_test_sets_a_handler():
    signal.signal(signal.SIGTERM, handler)


def test_the_next_plain_test_still_has_it():
    try:
        assert signal.getsignal(signal.SIGTERM) is handler
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.mark.thirdshift
def test_a_thirdshift_test_installs_the_interrupts():
    interrupts.install()
    interrupts.request()


def test_after_it_the_handlers_and_the_interrupt_are_gone():
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert not interrupts.requested()


def test_a_test_with_a_fixture_is_isolated_too(scripted_outside):
    interrupts.request()


def test_and_leaves_no_interrupt_either():
    assert not interrupts.requested()
"""


def test_only_thirdshifts_tests_are_isolated_from_interrupts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(INNER)

    pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly").assert_outcomes(passed=6)
