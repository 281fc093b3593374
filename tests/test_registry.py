"""The Harness registry: built-ins, plugins (in-test and through entry points), lookups."""

from __future__ import annotations

import re
import signal
import sys
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar, Literal

import pytest

import thirdshift
from thirdshift import Choice, ThirdshiftError, Usage
from thirdshift._budget import BudgetChecks
from thirdshift._sandbox import SandboxNeeds
from thirdshift._values import Billing
from thirdshift.harness import (
    ClaudeHarness,
    ClaudeReader,
    CodexHarness,
    FailureInfo,
    GeminiHarness,
    Harness,
    Invocation,
    OpencodeHarness,
    QwenHarness,
    StreamReader,
    hookimpl,
)
from thirdshift.harness import (
    _hookspecs as hookspecs,
)
from thirdshift.harness import _registry as harness_registry
from thirdshift.harness._base import HARNESS_MEMBERS, STREAM_READER_MEMBERS, missing_members
from thirdshift.harness._registry import (
    Registry,
    harness_named,
    harness_names,
    harnesses,
    register,
    registry,
    unregister,
)

BUILT_INS = ("claude", "codex", "opencode", "gemini", "qwen")


@dataclass(frozen=True)
class EchoHarness(Harness):
    """A Harness of a made-up CLI, as a third-party package would offer one (a subclass of
    Harness has the defaults of the members it does not set)."""

    name: str = "echo"
    stop_signals: ClassVar[tuple[signal.Signals, ...]] = ()
    skills_dir: ClassVar[str] = ".echo/skills"

    def invocation(
        self, choice: Choice, resume: str | None, prompt: str, skills: Sequence[str] = ()
    ) -> Invocation:
        return Invocation(argv=("echo",), stdin=prompt)

    def reader(self, worktree: Path) -> ClaudeReader:
        return ClaudeReader(worktree)


class EchoPlugin:
    def __init__(self, *offered: object) -> None:
        self.offered: list[object] = list(offered) if offered else [EchoHarness()]

    @hookimpl
    def thirdshift_harnesses(self) -> list[object]:
        return self.offered


@pytest.fixture
def fresh() -> Registry:
    return registry(entry_points=False)


def test_the_built_ins_come_first() -> None:
    assert harness_names()[:5] == BUILT_INS
    assert harness_named("claude") == ClaudeHarness()
    assert harness_named("codex") == CodexHarness()
    assert thirdshift.harness.harness_named("codex") == CodexHarness()


def test_a_fresh_registry_holds_only_the_built_ins(fresh: Registry) -> None:
    assert harness_names(fresh) == BUILT_INS
    assert harnesses(fresh) == (
        ClaudeHarness(),
        CodexHarness(),
        OpencodeHarness(),
        GeminiHarness(),
        QwenHarness(),
    )


def test_an_unknown_name_lists_every_registered_one(fresh: Registry) -> None:
    with pytest.raises(ThirdshiftError) as raised:
        harness_named("goose", fresh)
    assert (
        str(raised.value)
        == "unknown Harness goose: choose one of claude, codex, opencode, gemini, qwen"
    )


def test_the_shared_registry_refuses_an_unknown_name_too() -> None:
    with pytest.raises(
        ThirdshiftError,
        match=r"^unknown Harness nope: choose one of claude, codex, opencode, gemini, qwen",
    ):
        harness_named("nope")


def test_an_in_test_plugin_adds_a_harness(fresh: Registry) -> None:
    fresh.register(EchoPlugin())
    assert harness_names(fresh) == (*BUILT_INS, "echo")
    assert harness_named("echo", fresh) == EchoHarness()
    with pytest.raises(ThirdshiftError) as raised:
        harness_named("nope", fresh)
    assert (
        str(raised.value)
        == "unknown Harness nope: choose one of claude, codex, opencode, gemini, qwen, echo"
    )


def test_plugins_are_listed_in_registration_order(fresh: Registry) -> None:
    fresh.register(EchoPlugin(EchoHarness("b")))
    fresh.register(EchoPlugin(EchoHarness("a"), EchoHarness("c")))
    assert harness_names(fresh) == (*BUILT_INS, "b", "a", "c")


def test_a_plugin_cannot_replace_a_built_in(fresh: Registry) -> None:
    fresh.register(EchoPlugin(EchoHarness("claude"), EchoHarness("late")))
    assert harness_named("claude", fresh) == ClaudeHarness()
    assert harness_names(fresh) == (*BUILT_INS, "late")


def test_a_module_can_be_a_plugin(fresh: Registry, tmp_path: Path) -> None:
    module = type(sys)("echo_module_plugin")
    exec(
        textwrap.dedent(
            """
            from thirdshift.harness import hookimpl

            @hookimpl
            def thirdshift_harnesses():
                return [HARNESS]
            """
        ),
        module.__dict__,
    )
    module.HARNESS = EchoHarness("from-module")  # type: ignore[attr-defined]
    fresh.register(module)
    assert harness_named("from-module", fresh) == EchoHarness("from-module")


@pytest.mark.parametrize(
    ("offered", "problem"),
    [
        (["not a harness"], "it offered 'not a harness', which is not a Harness"),
        ([EchoHarness("")], "it offered EchoHarness(name=''), which is not a Harness"),
        ([EchoHarness("fine"), None], "it offered None, which is not a Harness"),
    ],
)
def test_a_plugin_offering_no_harness_is_left_out_with_a_warning(
    fresh: Registry, offered: list[object], problem: str
) -> None:
    fresh.register(EchoPlugin(*offered), name="bad-plugin")
    fresh.register(EchoPlugin(EchoHarness("good")))
    with pytest.warns(
        RuntimeWarning, match=re.escape(f"the thirdshift plugin bad-plugin is left out: {problem}")
    ):
        assert harness_names(fresh) == (*BUILT_INS, "good")
    with pytest.raises(ThirdshiftError) as raised, pytest.warns(RuntimeWarning):
        harness_named("fine", fresh)
    assert str(raised.value).startswith(
        "unknown Harness fine: choose one of claude, codex, opencode, gemini, qwen, good "
        "(the thirdshift plugin bad-plugin"
    )


def test_a_plugin_returning_no_list_is_left_out(fresh: Registry) -> None:
    class Bad:
        @hookimpl
        def thirdshift_harnesses(self) -> object:
            return EchoHarness()

    fresh.register(Bad(), name="flat")
    with pytest.warns(RuntimeWarning, match="flat is left out: thirdshift_harnesses returned"):
        assert harness_names(fresh) == BUILT_INS


def test_a_plugin_whose_hook_raises_is_left_out(fresh: Registry) -> None:
    class Raising:
        @hookimpl
        def thirdshift_harnesses(self) -> list[object]:
            raise RuntimeError("no config file")

    fresh.register(Raising(), name="raising")
    with pytest.warns(RuntimeWarning, match="raising is left out: no config file"):
        assert harness_named("codex", fresh) == CodexHarness()
    assert fresh.plugin_failures == ["the thirdshift plugin raising is left out: no config file"]


@pytest.fixture
def registered() -> Iterator[EchoPlugin]:
    plugin = EchoPlugin(EchoHarness("shared-echo"))
    register(plugin)
    yield plugin
    unregister(plugin)


def test_register_adds_to_the_shared_registry(registered: EchoPlugin) -> None:
    assert harness_named("shared-echo") == EchoHarness("shared-echo")
    assert "shared-echo" in thirdshift.harness_names()


def test_unregister_takes_it_out_again() -> None:
    plugin = EchoPlugin(EchoHarness("gone-again"))
    register(plugin)
    unregister(plugin)
    assert "gone-again" not in harness_names()


def test_the_shared_registry_is_built_once() -> None:
    assert harness_registry.shared_registry() is harness_registry.shared_registry()


# Entry points: a real distribution on sys.path, found through importlib.metadata


def _install(site: Path, module: str, source: str) -> None:
    """Lay out a distribution with a ``thirdshift`` entry point, as pip would install it."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[thirdshift]\n{module} = {module}\n")


PLUGIN_SOURCE = """
    from dataclasses import dataclass
    from thirdshift.harness import ClaudeHarness, hookimpl

    @dataclass(frozen=True)
    class Aider(ClaudeHarness):
        name = "aider"

    @hookimpl
    def thirdshift_harnesses():
        return [Aider()]
"""


def test_an_installed_package_adds_a_harness_through_its_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(tmp_path, "thirdshift_aider", PLUGIN_SOURCE)
    monkeypatch.syspath_prepend(tmp_path)
    try:
        found = registry()
        assert harness_names(found) == (*BUILT_INS, "aider")
        assert harness_named("aider", found).name == "aider"
        assert "aider" not in harness_names(registry(entry_points=False))
    finally:
        sys.modules.pop("thirdshift_aider", None)


def test_a_plugin_that_fails_to_load_leaves_the_built_ins_working(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(tmp_path, "thirdshift_broken", "raise ImportError('missing dependency xyz')\n")
    _install(tmp_path, "thirdshift_aider", PLUGIN_SOURCE)
    monkeypatch.syspath_prepend(tmp_path)
    try:
        with pytest.warns(RuntimeWarning, match="thirdshift_broken: missing dependency xyz"):
            found = registry()
        assert harness_names(found) == (*BUILT_INS, "aider")
        with pytest.raises(ThirdshiftError) as raised:
            harness_named("broken", found)
    finally:
        sys.modules.pop("thirdshift_aider", None)
    assert str(raised.value) == (
        "unknown Harness broken: choose one of claude, codex, opencode, gemini, qwen, aider "
        "(could not load the thirdshift plugin thirdshift_broken: missing dependency xyz)"
    )


@dataclass(frozen=True)
class Structural:
    """A plugin's Harness that does not subclass Harness: it must have every member itself."""

    name: str = "structural"
    stop_signals: tuple[signal.Signals, ...] = ()
    skills_dir: str = ".structural/skills"
    stderr_noise: tuple[str, ...] = ()
    env_passthrough: tuple[str, ...] = ()
    budget_checks: BudgetChecks = BudgetChecks()  # noqa: RUF009 (a frozen value)
    helper_processes: tuple[str, ...] = ()
    resume_missing: re.Pattern[str] | None = None
    sandbox_needs: SandboxNeeds = SandboxNeeds()  # noqa: RUF009 (a frozen value)
    billing_told: Literal["before", "stream"] | None = None

    def invocation(
        self, choice: Choice, resume: str | None, prompt: str, skills: Sequence[str] = ()
    ) -> Invocation:
        return Invocation(argv=("structural",), stdin=prompt)

    def reader(self, worktree: Path) -> ClaudeReader:
        return ClaudeReader(worktree)

    def unwrap_command(self, script: str) -> str:
        return script

    def stderr_failure(self, line: str | None) -> FailureInfo | None:
        return None

    def work_killed_at_exit(
        self, worktree: Path, env: Mapping[str, str], session_id: str
    ) -> Mapping[str, str]:
        return {}

    def billing(self, env: Mapping[str, str]) -> Billing | None:
        return None

    def subagent_usage(self, env: Mapping[str, str], session_id: str, since: float) -> Usage | None:
        return None

    def genai_provider(self, choice: Choice) -> str:
        return "structural"


def test_a_harness_with_every_member_need_not_subclass_harness(fresh: Registry) -> None:
    fresh.register(EchoPlugin(Structural()), name="structural")
    assert harness_named("structural", fresh) == Structural()


def test_a_harness_lacking_a_member_is_left_out_naming_it(fresh: Registry) -> None:
    @dataclass(frozen=True)
    class Partial:  # a plugin's Harness written before stderr_noise and the rest were declared
        name: str = "partial"
        stop_signals: tuple[signal.Signals, ...] = ()
        skills_dir: str = ".partial/skills"

    fresh.register(EchoPlugin(Partial()), name="partial")
    with pytest.warns(RuntimeWarning) as warned:
        assert harness_names(fresh) == BUILT_INS
    (message,) = {str(warning.message) for warning in warned}
    assert "the thirdshift plugin partial is left out" in message
    assert "it has no invocation, reader, stderr_noise, env_passthrough, budget_checks" in message
    assert "a subclass of thirdshift.harness.Harness has defaults" in message


def test_every_harness_member_is_declared_with_a_default_where_optional() -> None:
    required = {"name", "stop_signals", "skills_dir", "invocation", "reader"}
    assert set(HARNESS_MEMBERS) >= required | {
        "stderr_noise",
        "env_passthrough",
        "budget_checks",
        "helper_processes",
        "sandbox_needs",
        "unwrap_command",
        "work_killed_at_exit",
        "stderr_failure",
        "billing_told",
        "billing",
        "subagent_usage",
        "genai_provider",
    }
    echo = EchoHarness()  # sets only the required ones: the rest are the contract's defaults
    assert (echo.billing_told, echo.billing({}), echo.subagent_usage({}, "id", 0.0)) == (
        None,
        None,
        None,
    )
    assert (echo.stderr_noise, echo.env_passthrough, echo.helper_processes) == ((), (), ())
    assert echo.budget_checks == BudgetChecks()
    assert echo.unwrap_command("sh -c x") == "sh -c x"
    assert echo.work_killed_at_exit(Path("."), {}, "id") == {}
    assert echo.stderr_failure("Error: no rollout found for thread id") is None
    assert echo.genai_provider(Choice(echo)) == echo.name  # a custom value: its own name
    assert missing_members(echo) == ()


def test_every_reader_member_is_declared_with_a_default_where_optional() -> None:
    assert set(STREAM_READER_MEMBERS) >= {
        "usage_so_far",
        "still_running",
        "turns_ended",
        "failure",
        "failure_at",
        "finish",
        "billing",
        "billed",
        "refused",
        "add_subagents",
        "report_tool_calls",
    }
    for harness in harnesses(registry(entry_points=False)):
        reader = harness.reader(Path("."))
        assert StreamReader in type(reader).__mro__
        assert (reader.usage_so_far, reader.still_running, reader.turns_ended) == (None, (), 0)
        assert (reader.billing, reader.refused) == (None, None)
        assert reader.failure is None
        assert reader.failure_at(datetime.now(UTC)) is None
        before = reader.failed
        reader.finish(0)
        if type(reader).finish is StreamReader.finish:  # the default changes nothing
            assert reader.failed == before


def test_both_hooks_are_declared_hookspecs(fresh: Registry) -> None:
    for hook in ("thirdshift_harnesses", "thirdshift_conformance_scenarios"):
        caller = getattr(fresh.hook, hook)
        assert caller.spec is not None, f"{hook} is called but not declared"
        assert caller.spec.namespace is hookspecs
