"""``thirdshift.Watchdogs``: one value, checked when made, taken by ``within`` unchanged."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from thirdshift import Logs, Sessions, Watchdogs, claude
from thirdshift.testing import ScriptedOutside

WATCHDOGS = ["idle", "after_result", "wall"]


def test_the_defaults_are_half_an_hour_idle_a_minute_after_the_result_no_wall_10s_grace() -> None:
    assert Watchdogs() == Watchdogs(idle=1800.0, after_result=60.0, wall=None, stop_grace=10.0)


def test_each_watchdog_is_turned_off_by_none_and_takes_whole_seconds_too() -> None:
    off = Watchdogs(idle=None, after_result=None, wall=None, stop_grace=0)
    assert (off.idle, off.after_result, off.wall, off.stop_grace) == (None, None, None, 0)
    assert Watchdogs(wall=90).wall == 90


@pytest.mark.parametrize("name", WATCHDOGS)
@pytest.mark.parametrize("limit", [0.0, 0, -1.0, math.inf, math.nan])
def test_a_watchdog_that_is_no_duration_above_0_is_a_value_error_naming_it(
    name: str, limit: float
) -> None:
    with pytest.raises(
        ValueError,
        match=rf"^Watchdogs {name} must be None \(off\) or a finite number of seconds above 0, "
        rf"not {limit!r}$",
    ):
        Watchdogs(**{name: limit})


@pytest.mark.parametrize("grace", [-1.0, -0.5, math.inf, math.nan])
def test_a_stop_grace_that_is_no_duration_is_a_value_error_naming_it(grace: float) -> None:
    with pytest.raises(
        ValueError,
        match=r"^Watchdogs stop_grace must be a finite number of seconds, 0 or more, not ",
    ):
        Watchdogs(stop_grace=grace)


@pytest.mark.parametrize("name", [*WATCHDOGS, "stop_grace"])
@pytest.mark.parametrize("value", ["30m", True, [60]])
def test_what_is_no_number_is_a_type_error_naming_the_field(name: str, value: object) -> None:
    with pytest.raises(TypeError, match=rf"^Watchdogs {name} must be .*number of seconds, not "):
        Watchdogs(**{name: value})  # type: ignore[arg-type]


def test_a_stop_grace_of_none_is_a_type_error_it_cannot_be_turned_off() -> None:
    with pytest.raises(TypeError, match=r"^Watchdogs stop_grace must be a number of seconds, not"):
        Watchdogs(stop_grace=None)  # type: ignore[arg-type]


def test_it_is_a_frozen_value() -> None:
    with pytest.raises(AttributeError):
        Watchdogs().idle = 5  # type: ignore[misc]
    assert hash(Watchdogs(wall=5)) == hash(Watchdogs(wall=5))


@pytest.mark.parametrize("given", [{"idle": 60}, 60.0, "watchdogs"])
def test_within_refuses_what_is_no_watchdogs_before_anything_runs(
    tmp_path: Path, given: object
) -> None:
    outside = ScriptedOutside()
    with (
        pytest.raises(TypeError, match=r"^watchdogs must be a thirdshift.Watchdogs or None, not "),
        Sessions.within(
            Logs(tmp_path, "repo"),
            tmp_path,
            claude(),
            outside=outside,
            watchdogs=given,  # type: ignore[arg-type]
        ),
    ):
        pass
    assert outside.calls == []
