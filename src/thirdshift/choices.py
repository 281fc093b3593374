"""From a registered Harness's name to a :class:`~thirdshift.harness.Choice`.

``thirdshift.claude()`` and ``thirdshift.codex()`` cover the built-ins; :func:`choice` reaches
any registered Harness, plugins' included, by the name a user typed or configured.
"""

from __future__ import annotations

from collections.abc import Iterable

from thirdshift.containment import Containment
from thirdshift.harness.base import Choice
from thirdshift.harness.registry import harness_named


def choice(
    name: str,
    model: str | None = None,
    effort: str | None = None,
    extra_args: Iterable[str] = (),
    *,
    containment: Containment = "auto",
) -> Choice:
    """The Harness called ``name`` with this model, effort and extra CLI arguments.

    ``containment`` as for :func:`thirdshift.claude`. An unknown name raises
    :class:`~thirdshift.errors.ThirdshiftError` listing the known ones.
    """
    if isinstance(extra_args, str):
        raise TypeError("extra_args must be a sequence of arguments, not one string")
    return Choice(
        harness=harness_named(name),
        model=model,
        effort=effort,
        extra_args=tuple(extra_args),
        containment=containment,
    )
