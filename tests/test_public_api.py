"""The public API as a downstream user meets it: names, exports, types and deprecations."""

from __future__ import annotations

import importlib
import inspect
import threading
from pathlib import Path
from types import ModuleType

import pytest

import pytest_thirdshift
import thirdshift
import thirdshift.testing
from thirdshift import Choice, Ended, Logs, Sessions, ThirdshiftError
from thirdshift.harness import CodexHarness, harness_named

ROOT = Path(__file__).resolve().parent.parent

THIRDSHIFT_ALL = [
    "AuthFailed",
    "Budget",
    "BudgetExhausted",
    "CLINotFound",
    "Choice",
    "Ended",
    "Interrupted",
    "LaterStepFailed",
    "LogLimitReached",
    "Logs",
    "Outside",
    "Overloaded",
    "RateLimited",
    "ResumeTargetMissing",
    "Sandbox",
    "SessionFailed",
    "SessionRecord",
    "SessionStalled",
    "Sessions",
    "ThirdshiftError",
    "TurnLimitReached",
    "Usage",
    "UsageLimitReached",
    "Watchdogs",
    "WorkKilledAgain",
    "__version__",
    "choice",
    "claude",
    "codex",
    "errors",
    "gemini",
    "harness",
    "harness_names",
    "interrupts",
    "opencode",
    "qwen",
    "testing",
]
TESTING_ALL = [
    "ProgressLine",
    "ScriptedOutside",
    "SessionCall",
    "UnscriptedSession",
    "conformance",
    "default_outside",
    "fakecli",
    "fakemodel",
    "steps",
    "waits",
]
PLUGIN_ALL = [
    "FakeCLIs",
    "FakeModel",
    "RecordedWaits",
    "ScriptedOutside",
    "fake_cli_on_path",
    "fake_model",
    "instant_waits",
    "scripted_outside",
]
# The testing toolkit's public surface: every __all__ of thirdshift.testing, its subpackages
# and pytest_thirdshift, a name offered by several counted once (the docs say this number).
TOOLKIT_MODULES = (
    "pytest_thirdshift",
    "thirdshift.testing",
    "thirdshift.testing.conformance",
    "thirdshift.testing.fakecli",
    "thirdshift.testing.fakemodel",
    "thirdshift.testing.steps",
    "thirdshift.testing.waits",
)
TOOLKIT_NAMES = 51


def public_members(module: ModuleType) -> list[str]:
    """Names a user sees in ``module``, as httpx's test_exported_members collects them.

    Submodules count only where ``__all__`` offers them: importing ``thirdshift._logs`` makes
    ``logs`` an attribute of the package without making it part of the API.
    """
    offered = set(module.__all__)
    return sorted(
        (
            name
            for name, value in vars(module).items()
            if (not name.startswith("_") or name == "__version__")
            and (not isinstance(value, ModuleType) or name in offered)
        ),
        key=str.casefold,
    )


@pytest.mark.parametrize(
    ("module", "pinned"),
    [
        (thirdshift, THIRDSHIFT_ALL),
        (thirdshift.testing, TESTING_ALL),
        (pytest_thirdshift, PLUGIN_ALL),
    ],
    ids=["thirdshift", "thirdshift.testing", "pytest_thirdshift"],
)
def test_all_is_pinned_sorted_and_resolves(module: ModuleType, pinned: list[str]) -> None:
    assert module.__all__ == pinned
    assert module.__all__ == sorted(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is not None, name


# The plugin is left out: pytest finds its hooks by public names that are not API.
@pytest.mark.parametrize("module", [thirdshift, thirdshift.testing], ids=lambda m: m.__name__)
def test_every_public_name_of_the_package_is_in_all(module: ModuleType) -> None:
    assert set(public_members(module)) <= set(module.__all__)


def test_the_testing_toolkit_offers_this_many_names() -> None:
    names = {name for module in TOOLKIT_MODULES for name in importlib.import_module(module).__all__}
    assert len(names) == TOOLKIT_NAMES


def test_each_step_has_one_door() -> None:
    offered = {
        name: [
            module for module in TOOLKIT_MODULES if name in importlib.import_module(module).__all__
        ]
        for name in thirdshift.testing.steps.__all__
    }
    assert offered == {name: ["thirdshift.testing.steps"] for name in offered}


def test_resume_prompt_is_not_top_level_api() -> None:
    assert not hasattr(thirdshift, "resume_prompt")


def test_choice_makes_a_choice_of_a_registered_harness_by_name() -> None:
    made = thirdshift.choice("codex", model="gpt-5.5", effort="high", extra_args=["--x"])

    assert isinstance(made, Choice)
    assert isinstance(made.harness, CodexHarness)
    assert (made.model, made.effort, made.extra_args) == ("gpt-5.5", "high", ("--x",))
    assert thirdshift.choice("claude").harness.name == "claude"


def test_choice_takes_what_claude_takes() -> None:
    after_the_name = list(inspect.signature(thirdshift.choice).parameters.values())[1:]
    taken = [(p.name, p.kind, p.default, p.annotation) for p in after_the_name]
    claude_takes = inspect.signature(thirdshift.claude).parameters.values()
    assert taken == [(p.name, p.kind, p.default, p.annotation) for p in claude_takes]


def test_choice_passes_env_and_its_policy_on() -> None:
    made = thirdshift.choice("claude", env={"B": "2", "A": None}, env_policy="minimal")
    assert made == thirdshift.claude(env={"B": "2", "A": None}, env_policy="minimal")
    assert (made.env, made.env_policy) == ((("A", None), ("B", "2")), "minimal")


def test_choice_of_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(
        ThirdshiftError, match=r"^unknown Harness nope: choose one of claude, codex"
    ):
        thirdshift.choice("nope")


def test_choice_refuses_extra_args_given_as_one_string() -> None:
    with pytest.raises(TypeError, match="not one string"):
        thirdshift.choice("claude", extra_args="--verbose")


def test_within_refuses_a_harness_and_says_how_to_make_a_choice(tmp_path: Path) -> None:
    logs = Logs(tmp_path, "repo")
    outside = thirdshift.testing.ScriptedOutside()
    with (
        pytest.raises(TypeError, match=r"pass thirdshift\.choice\('codex'\)"),
        Sessions.within(logs, tmp_path, harness_named("codex"), outside=outside),  # type: ignore[arg-type]
    ):
        pass
    with (
        pytest.raises(TypeError, match=r"needs a Choice, not str"),
        Sessions.within(logs, tmp_path, "codex", outside=outside),  # type: ignore[arg-type]
    ):
        pass
    with (  # the name passed is the one suggested back
        pytest.raises(TypeError, match=r"pass thirdshift\.choice\('gemini'\)"),
        Sessions.within(logs, tmp_path, "gemini", outside=outside),  # type: ignore[arg-type]
    ):
        pass
    assert outside.calls == []


def test_installing_the_interrupt_handlers_off_the_main_thread_says_where_to_call_it() -> None:
    raised: list[BaseException] = []

    def install() -> None:
        try:
            thirdshift.interrupts.install()
        except BaseException as error:
            raised.append(error)

    worker = threading.Thread(target=install)
    worker.start()
    worker.join()

    assert [type(error) for error in raised] == [RuntimeError]
    assert "must be called from the main thread" in str(raised[0])


class SteppingOutside:
    """An Outside with ``step`` where the seam has ``report``, and no ``wait`` or ``cancel``."""

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
        return Ended(session_id=None, killed=())

    def step(self, line: str) -> None:
        pass


def test_an_outside_that_lacks_part_of_the_seam_is_refused_saying_what_it_lacks(
    tmp_path: Path,
) -> None:
    with pytest.raises(
        TypeError, match=r"^SteppingOutside is not an Outside: it has no report, wait, cancel"
    ):
        Sessions(Logs(tmp_path, "repo"), SteppingOutside())  # type: ignore[arg-type]


# The public surface: which modules are API, and what each offers

PUBLIC_MODULES = (
    "pytest_thirdshift",
    "thirdshift",
    "thirdshift.errors",
    "thirdshift.harness",
    "thirdshift.interrupts",
    "thirdshift.temporal",
    "thirdshift.testing",
    "thirdshift.testing.conformance",
    "thirdshift.testing.fakecli",
    "thirdshift.testing.fakemodel",
    "thirdshift.testing.steps",
    "thirdshift.testing.waits",
)


def module_names() -> list[str]:
    """Every module of the two packages, by its dotted name, from the source tree."""
    src = ROOT / "src"
    names = []
    for path in sorted((src / "thirdshift").rglob("*.py")) + sorted(
        (src / "pytest_thirdshift").rglob("*.py")
    ):
        parts = path.relative_to(src).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_every_module_that_is_not_api_has_a_leading_underscore() -> None:
    private = [name for name in module_names() if name not in PUBLIC_MODULES]
    named_public = [
        name for name in private if not any(part.startswith("_") for part in name.split("."))
    ]
    assert named_public == []
    assert set(PUBLIC_MODULES) <= set(module_names())


# The plugin is left out: pytest finds its hooks by public names that are not API.
@pytest.mark.parametrize("name", [name for name in PUBLIC_MODULES if name != "pytest_thirdshift"])
def test_each_public_module_offers_in_all_every_public_name_it_defines(name: str) -> None:
    """What ``vars()`` holds that the module itself (or a private module under it) defines,
    with a public name, is offered in ``__all__``; what ``__all__`` offers resolves."""
    module = importlib.import_module(name)
    offered = set(module.__all__)
    defined_here = {
        attribute
        for attribute, value in vars(module).items()
        if not attribute.startswith("_")
        and not isinstance(value, ModuleType)
        and _defined_within(getattr(value, "__module__", None), name)
    }
    assert sorted(defined_here - offered) == []
    for attribute in module.__all__:
        assert getattr(module, attribute) is not None, attribute


def _defined_within(where: object, name: str) -> bool:
    if not isinstance(where, str):
        return False
    if where == name:
        return True
    tail = where.removeprefix(f"{name}.")
    return tail != where and tail.split(".")[0].startswith("_")


def test_the_top_level_holds_the_user_api_and_the_plugin_authors_api_stays_in_harness() -> None:
    for plugin_author_name in ("Harness", "StreamReader", "Invocation", "hookimpl"):
        assert plugin_author_name not in thirdshift.__all__
        assert plugin_author_name in thirdshift.harness.__all__
