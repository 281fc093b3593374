"""The machine's knobs of ``within`` besides its Watchdogs (the log cap, the still-running
line), checked by ``wiring`` before anything is set up, under a stand-in too."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from thirdshift import Logs, Sessions, claude
from thirdshift._wiring import check_machine_knobs
from thirdshift.testing import ScriptedOutside


@pytest.mark.parametrize("every", [0.0, -1.0, math.inf, math.nan, True, "5m"])
def test_a_still_running_period_that_is_no_duration_above_0_is_refused(every: object) -> None:
    with pytest.raises(
        ValueError, match=r"^still_running_every must be None \(no limit\) or a finite number"
    ):
        check_machine_knobs(1 << 30, every)


def test_the_defaults_and_none_are_knobs() -> None:
    check_machine_knobs(1 << 30, 300.0)
    check_machine_knobs(None, None)


def test_a_knob_is_checked_under_a_stand_in_too_before_anything_runs(tmp_path: Path) -> None:
    outside = ScriptedOutside()
    with (
        pytest.raises(ValueError, match=r"^still_running_every must be None \(no limit\)"),
        Sessions.within(
            Logs(tmp_path, "repo"), tmp_path, claude(), outside=outside, still_running_every=0
        ),
    ):
        pass
    assert outside.calls == []


@pytest.mark.parametrize("cap", [0, -5, 1.5, True, "1G"])
def test_a_log_cap_that_is_no_whole_number_of_bytes_is_refused(cap: object) -> None:
    with pytest.raises(ValueError, match=r"^max_log_bytes must be None \(no cap\) or a whole"):
        check_machine_knobs(cap, 300.0)


def test_a_log_cap_of_0_is_refused_by_within_under_a_stand_in(tmp_path: Path) -> None:
    with (
        pytest.raises(ValueError, match="max_log_bytes"),
        Sessions.within(
            Logs(tmp_path, "repo"), tmp_path, claude(), outside=ScriptedOutside(), max_log_bytes=0
        ),
    ):
        pass
