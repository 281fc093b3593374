"""The Harness registry: the built-in Harnesses (Claude, Codex, opencode, Gemini, Qwen), and
those plugins add.

Built on ``pluggy`` (see :mod:`thirdshift.harness._hookspecs`). The built-ins are registered as
internal plugins first, then every plugin installed under the ``thirdshift`` entry-point group.
Harnesses are listed in that order; when two share a name, the first registered wins, so an
installed package cannot quietly replace ``claude`` or ``codex``.

The shared registry is built on first use, so importing thirdshift loads no plugin.
"""

from __future__ import annotations

import importlib.metadata
import threading
import warnings
from collections.abc import Iterable, Mapping

import pluggy

from thirdshift._containment import Containment
from thirdshift._sandbox import Sandbox
from thirdshift._values import Billing, EnvPolicy
from thirdshift.errors import ConfigurationError
from thirdshift.harness import _hookspecs as hookspecs
from thirdshift.harness._base import NO_ENV, Choice, Harness, made_choice, missing_members
from thirdshift.harness._builtin.claude import ClaudeHarness
from thirdshift.harness._builtin.codex import CodexHarness
from thirdshift.harness._builtin.gemini import GeminiHarness
from thirdshift.harness._builtin.opencode import OpencodeHarness
from thirdshift.harness._builtin.qwen import QwenHarness
from thirdshift.harness._hookspecs import PROJECT, hookimpl


class _BuiltIn:
    """An internal plugin offering one built-in Harness."""

    def __init__(self, harness: Harness) -> None:
        self._harness = harness

    @hookimpl
    def thirdshift_harnesses(self) -> list[Harness]:
        return [self._harness]


class Registry(pluggy.PluginManager):
    """A pluggy plugin manager for the ``thirdshift`` hooks that remembers plugins that failed.

    A broken plugin must not take the built-in Harnesses down with it (the CLI lists Harness
    names as it builds its parser), so its failure is warned about, kept, and named again when
    a Harness is asked for by a name nobody offers.
    """

    def __init__(self) -> None:
        super().__init__(PROJECT)
        self.plugin_failures: list[str] = []
        """Each plugin failure so far, once: failing to load, raising, offering no Harness."""


def registry(*, entry_points: bool = True) -> Registry:
    """A new registry holding the built-in Harnesses and, if ``entry_points``, installed plugins.

    Most code uses the shared registry through :func:`harness_named`; a fresh one is for tests
    and for programs that want their own set of plugins.
    """
    manager = Registry()
    manager.add_hookspecs(hookspecs)
    manager.register(_BuiltIn(ClaudeHarness()), name="thirdshift.claude")
    manager.register(_BuiltIn(CodexHarness()), name="thirdshift.codex")
    for harness in (OpencodeHarness(), GeminiHarness(), QwenHarness()):
        manager.register(_BuiltIn(harness), name=f"thirdshift.{harness.name}")
    if entry_points:
        _load_entry_points(manager)
    return manager


def _load_entry_points(manager: Registry) -> None:
    """Load the plugins of the ``thirdshift`` entry-point group, each on its own."""
    for entry_point in importlib.metadata.entry_points(group=PROJECT):
        try:
            manager.load_setuptools_entrypoints(PROJECT, name=entry_point.name)
        except Exception as error:
            _failed(manager, f"could not load the thirdshift plugin {entry_point.name}: {error}")


_shared_lock = threading.Lock()
_shared: list[Registry] = []  # holds the one shared registry once it is built


def shared_registry() -> Registry:
    """The registry :func:`harness_named` uses, built (plugins loaded) on first use."""
    with _shared_lock:
        if not _shared:
            _shared.append(registry())
        return _shared[0]


def register(plugin: object, name: str | None = None) -> str | None:
    """Add ``plugin`` to the shared registry (e.g. a test's own Harness); returns its name."""
    return shared_registry().register(plugin, name=name)


def unregister(plugin: object) -> None:
    """Take ``plugin``, added with :func:`register`, out of the shared registry again."""
    shared_registry().unregister(plugin)


def harnesses(manager: pluggy.PluginManager | None = None) -> tuple[Harness, ...]:
    """Every registered Harness, in registration order, the first of each name only.

    Each plugin's hook is called on its own, so that one that raises or offers something other
    than Harnesses is left out (with a warning) rather than hiding every other plugin's.
    """
    chosen = manager if manager is not None else shared_registry()
    found: dict[str, Harness] = {}
    for implementation in chosen.hook.thirdshift_harnesses.get_hookimpls():
        try:
            offered = _checked(implementation.function())
        except Exception as error:
            _failed(
                chosen, f"the thirdshift plugin {implementation.plugin_name} is left out: {error}"
            )
            continue
        for harness in offered:
            found.setdefault(harness.name, harness)
    return tuple(found.values())


def _checked(offered: object) -> list[Harness]:
    if not isinstance(offered, list | tuple):
        raise TypeError(f"thirdshift_harnesses returned {offered!r}, not a list")
    for harness in offered:
        missing = missing_members(harness)
        if missing:
            raise TypeError(
                f"it offered {harness!r}, which is not a Harness: it has no "
                f"{', '.join(missing)} (a subclass of thirdshift.harness.Harness has defaults)"
            )
        if not isinstance(harness.name, str) or not harness.name:
            raise TypeError(f"it offered {harness!r}, which is not a Harness: its name is no name")
    return list(offered)


def _failed(manager: pluggy.PluginManager, failure: str) -> None:
    """Warn about a plugin's failure, and keep it for an unknown name's error."""
    if isinstance(manager, Registry) and failure not in manager.plugin_failures:
        manager.plugin_failures.append(failure)
    warnings.warn(failure, RuntimeWarning, stacklevel=3)


def harness_names(manager: pluggy.PluginManager | None = None) -> tuple[str, ...]:
    """The names of every registered Harness, ``claude`` and ``codex`` first."""
    return tuple(harness.name for harness in harnesses(manager))


def harness_named(name: str, manager: pluggy.PluginManager | None = None) -> Harness:
    """The registered Harness called ``name``; raises ThirdshiftError naming every choice."""
    known = harnesses(manager)
    for harness in known:
        if harness.name == name:
            return harness
    choices = ", ".join(harness.name for harness in known)
    message = f"unknown Harness {name}: choose one of {choices}"
    chosen = manager if manager is not None else shared_registry()
    if isinstance(chosen, Registry) and chosen.plugin_failures:
        message += f" ({'; '.join(chosen.plugin_failures)})"
    raise ConfigurationError(message)


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
    """The Harness called ``name`` with this model, effort and extra CLI arguments
    (``thirdshift.choice``): any registered Harness, plugins' included, by the name a user
    typed or configured. It takes what ``claude()`` takes, after the name (a test holds them
    alike).

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
