"""thirdshift's extension point: two ``pluggy`` hooks (project and entry-point group
``thirdshift``), through which an installed package adds Harnesses and their conformance
scenarios. pluggy is pytest's own plugin system; nothing else of thirdshift is meant to be
extended from outside (an Outside of your own is a seam for tests, not a plugin).

A package implements the hooks in a module marked with :data:`hookimpl` (imported from
``thirdshift.harness``) and names that module in its ``thirdshift`` entry-point group::

    # my_package/thirdshift_plugin.py
    from thirdshift.harness import hookimpl

    @hookimpl
    def thirdshift_harnesses():
        return [MyHarness()]

    # pyproject.toml
    [project.entry-points.thirdshift]
    my_harness = "my_package.thirdshift_plugin"

What the registry (:mod:`thirdshift.harness._registry`) promises a plugin, and asks of it:

- the built-in Harnesses are registered first and keep their names: a plugin offering a
  Harness named ``claude`` is not asked for it (the first of a name wins);
- plugins load on first use of the registry (``thirdshift.choice``, ``harness_named``, the
  command's ``--harness``), never on ``import thirdshift``;
- a plugin that fails to load, raises from a hook, returns something other than a list, or
  offers an object lacking a member of :class:`~thirdshift.harness.Harness` is left out with a
  ``RuntimeWarning`` naming it; the other plugins and the built-ins stay, and an unknown
  Harness name's error repeats the failure;
- :func:`thirdshift_harnesses` is called each time Harnesses are listed or looked up, so it
  returns quickly and the same Harnesses each time.

The built-in Harnesses are registered through this same hook (``_registry._BuiltIn``).
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
"""Marks a plugin's ``thirdshift_harnesses`` and ``thirdshift_conformance_scenarios``."""


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
