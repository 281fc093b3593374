"""The hooks through which packages add Harnesses and their conformance scenarios (``pluggy``,
project name ``thirdshift``).

A package offers Harnesses by implementing :func:`thirdshift_harnesses` in a module (or on an
object) marked with :data:`hookimpl`, and naming that module in its ``thirdshift`` entry-point
group::

    # my_package/thirdshift_plugin.py
    from thirdshift.harness import hookimpl

    @hookimpl
    def thirdshift_harnesses():
        return [MyHarness()]

    # pyproject.toml
    [project.entry-points.thirdshift]
    my_harness = "my_package.thirdshift_plugin"
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from thirdshift.harness._base import Harness

PROJECT = "thirdshift"
"""The pluggy project name, which is also the entry-point group plugins are found in."""

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def thirdshift_harnesses() -> list[Harness]:  # type: ignore[empty-body]
    """The Harnesses this plugin offers; each one's ``name`` must be new to the registry.

    Called every time Harnesses are listed or looked up, so it should be cheap.
    """


@hookspec
def thirdshift_conformance_scenarios() -> list[Any]:  # type: ignore[empty-body]
    """Conformance scenarios for this plugin's Harnesses, run by ``thirdshift check``.

    A list of :class:`~thirdshift.testing.conformance.Scenario` (typed ``Any`` here: the
    Harness layer imports nothing of the testing toolkit, which a test checks).

    Each :class:`~thirdshift.testing.conformance.Scenario` names its Harness; it is played on
    the real CLI found on PATH under the fake model (its ``api`` says which side, ``claude``'s
    Anthropic Messages API or ``codex``'s OpenAI Responses API). A Harness no plugin offers
    scenarios for is reported as having none.
    """
