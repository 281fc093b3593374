"""From a registered Harness's name to a :class:`~thirdshift.harness.Choice`.

``thirdshift.claude()`` and ``thirdshift.codex()`` cover the built-ins; :func:`choice` reaches
any registered Harness, plugins' included, by the name a user typed or configured. It takes
what ``claude()`` takes, after the name (a test holds them alike).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from thirdshift._containment import Containment
from thirdshift._sandbox import Sandbox
from thirdshift._values import Billing, EnvPolicy
from thirdshift.harness._base import NO_ENV, Choice, made_choice
from thirdshift.harness._registry import harness_named


def choice(
    name: str,
    model: str | None = None,
    effort: str | None = None,
    extra_args: Iterable[str] = (),
    *,
    env: Mapping[str, str | None] = NO_ENV,
    env_policy: EnvPolicy | None = None,
    containment: Containment = "auto",
    sandbox: Sandbox | None = None,
    billing: Billing | None = None,
) -> Choice:
    """The Harness called ``name`` with this model, effort and extra CLI arguments.

    ``env``, ``env_policy``, ``containment``, ``sandbox`` and ``billing`` as for
    :func:`thirdshift.claude`. An unknown name raises
    :class:`~thirdshift.errors.ThirdshiftError` listing the known ones.
    """
    return made_choice(
        harness_named(name),
        model,
        effort,
        extra_args,
        env=env,
        env_policy=env_policy,
        containment=containment,
        sandbox=sandbox,
        billing=billing,
    )
