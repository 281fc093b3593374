"""Conformance scenarios: each written once, played on a fake CLI and on the real CLI.

A :class:`Scenario` gives the agent's steps in the shared vocabulary
(:mod:`thirdshift.testing.steps`) and the outcome it expects through thirdshift. :func:`play`
runs it through ``Sessions.within`` with a player — :class:`FakePlayer` (thirdshift's fake CLIs)
or :class:`RealPlayer` (the real CLI on PATH under
:class:`~thirdshift.testing.fakemodel.FakeModel`) — and returns what was :class:`Observed`;
:func:`differences` says in words where the two disagree::

    for scenario in scenarios("claude"):
        observed = play(scenario, RealPlayer(), Path(tempfile.mkdtemp()))
        print(scenario.title, differences(scenario.expected, observed) or "ok")

Plugins add scenarios for their own Harnesses through the ``thirdshift_conformance_scenarios``
hook (:mod:`thirdshift.harness._hookspecs`). Imports no pytest. See ``docs/conformance.md``.
"""

from __future__ import annotations

import pluggy

from thirdshift.harness._registry import shared_registry
from thirdshift.testing.conformance import _builtin, _others
from thirdshift.testing.conformance._others import BUILT_IN
from thirdshift.testing.conformance._players import FakePlayer, RealPlayer, Stage
from thirdshift.testing.conformance._runner import play
from thirdshift.testing.conformance._scenario import (
    Expected,
    Observed,
    Scenario,
    SessionOutcome,
    differences,
)


def scenarios(harness: str, manager: pluggy.PluginManager | None = None) -> tuple[Scenario, ...]:
    """The scenarios for the Harness named ``harness``: the built-in ones, then plugins'."""
    if harness in _others.HARNESSES:
        found = list(_others.scenarios_of(harness))
    elif harness in BUILT_IN:
        found = list(_builtin.scenarios_of(harness))
    else:
        found = []
    chosen = manager if manager is not None else shared_registry()
    for offered in chosen.hook.thirdshift_conformance_scenarios():
        found += [scenario for scenario in offered if scenario.harness == harness]
    return tuple(found)


__all__ = [
    "Expected",
    "FakePlayer",
    "Observed",
    "RealPlayer",
    "Scenario",
    "SessionOutcome",
    "Stage",
    "differences",
    "play",
    "scenarios",
]
