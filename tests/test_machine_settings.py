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
        MachineSettings(**{name: limit})


def test_the_defaults_and_none_limits_are_settings() -> None:
    assert MachineSettings() == MachineSettings(10.0, 1800.0, 60.0, None, 300.0)
    assert MachineSettings(idle_timeout=None, after_result_timeout=None).idle_timeout is None


def test_a_knob_is_checked_under_a_stand_in_too_before_anything_runs(tmp_path: Path) -> None:
    outside = ScriptedOutside()
    with (
        pytest.raises(ValueError, match=r"^timeout must be None \(no limit\)"),
        Sessions.within(Logs(tmp_path, "repo"), tmp_path, claude(), outside=outside, timeout=0),
    ):
        pass
    assert outside.calls == []
