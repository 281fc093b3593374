"""The machine's knobs of ``within``, checked where the adapter is built (``wiring``)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from thirdshift import Logs, Sessions, claude
from thirdshift._wiring import MachineSettings
from thirdshift.testing import ScriptedOutside


@pytest.mark.parametrize(
    "name", ["idle_timeout", "after_result_timeout", "timeout", "still_running_every"]
)
@pytest.mark.parametrize("limit", [0.0, -1.0, math.inf, math.nan])
def test_a_watchdog_limit_that_is_no_duration_above_0_is_refused(name: str, limit: float) -> None:
    with pytest.raises(ValueError, match=rf"^{name} must be None \(no limit\) or a finite number"):
        MachineSettings(**{name: limit})  # type: ignore[arg-type]


def test_the_defaults_and_none_limits_are_settings() -> None:
    assert MachineSettings() == MachineSettings(10.0, 1800.0, 60.0, None, 1 << 30, 300.0)
    assert MachineSettings(idle_timeout=None, after_result_timeout=None).idle_timeout is None


def test_a_knob_is_checked_under_a_stand_in_too_before_anything_runs(tmp_path: Path) -> None:
    outside = ScriptedOutside()
    with (
        pytest.raises(ValueError, match=r"^timeout must be None \(no limit\)"),
        Sessions.within(Logs(tmp_path, "repo"), tmp_path, claude(), outside=outside, timeout=0),
    ):
        pass
    assert outside.calls == []


@pytest.mark.parametrize("cap", [0, -5, 1.5, True, "1G"])
def test_a_log_cap_that_is_no_whole_number_of_bytes_is_refused(cap: object) -> None:
    with pytest.raises(ValueError, match=r"^max_log_bytes must be None \(no cap\) or a whole"):
        MachineSettings(max_log_bytes=cap)  # type: ignore[arg-type]


def test_the_log_cap_is_a_gib_by_default_and_none_turns_it_off(tmp_path: Path) -> None:
    assert MachineSettings().max_log_bytes == 1 << 30
    assert MachineSettings(max_log_bytes=None).max_log_bytes is None
    with (
        pytest.raises(ValueError, match="max_log_bytes"),
        Sessions.within(
            Logs(tmp_path, "repo"), tmp_path, claude(), outside=ScriptedOutside(), max_log_bytes=0
        ),
    ):
        pass
