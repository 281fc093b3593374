"""pytest_thirdshift: the pytest plugin for code that runs thirdshift.

Load it with ``pytest -p pytest_thirdshift`` (it also registers itself through the ``pytest11``
entry point). Fixtures:

- ``scripted_outside``: a :class:`ScriptedOutside` that ``Sessions.within`` uses while the
  fixture is active, for in-process tests of code that runs sessions.
- ``fake_cli_on_path``: :class:`~thirdshift.testing.fakecli.FakeCLIs`, fake ``claude``,
  ``codex``, ``opencode``, ``gemini`` and ``qwen`` programs first on PATH, scripted per call,
  for end-to-end tests with real processes (see ``docs/fake-clis.md``).
- ``fake_model``: the real CLIs on PATH against a scripted model on 127.0.0.1
  (see ``docs/fake-model.md``).
- ``instant_waits``: a :class:`~thirdshift.testing.waits.RecordedWaits`; while it is active,
  limit waits (a 429 under ``fake_cli_on_path`` or ``fake_model``) take no time and are
  recorded in its ``seconds``; the rules and the continued session are unchanged.

Markers: ``@pytest.mark.real_cli("claude")`` skips a test when that CLI is not on PATH (fails
it under ``THIRDSHIFT_REQUIRE_REAL_CLIS=1``). ``@pytest.mark.thirdshift(assert_all_consumed=False)``
lets a test leave script unused; any other argument, or a value that is not True or False,
fails the test. Unused script is reported only when the test itself passed, so a failing test
gets no second error for the script it never reached. Each teardown failure says how a test
that means it would allow it.

Every test that takes one of these fixtures or carries one of these markers runs inside
:func:`thirdshift.interrupts.isolated`: an interrupt it requests (and signal handlers its
``interrupts.install()`` set) end with it; the project's other tests are left as they are.
The limits a test's sessions report for their account end with every test, which would
otherwise park the next test's sessions.
A test without them that runs a session on a real agent CLI (one on PATH outside the test's
temporary folders) fails in one line saying so, before the CLI starts; the ini option
``thirdshift_guard_real_clis = false`` turns that off.

The test doubles themselves live in :mod:`thirdshift.testing` (no pytest needed there): its
``steps`` script them, and its ``fakecli``, ``fakemodel`` and ``conformance`` hold the rest.
Here are the fixtures and their types, for annotations (``fake_model: FakeModel``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Generator, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Protocol

import pytest

from pytest_thirdshift import _guard as guard
from pytest_thirdshift import _real_cli as real_cli
from pytest_thirdshift._fake_model import fake_model
from pytest_thirdshift._guard import _thirdshift_real_cli_guard  # noqa: F401 - a fixture
from pytest_thirdshift._real_cli import thirdshift_real_cli  # noqa: F401 - a fixture
from thirdshift import interrupts
from thirdshift._accounts import isolated as accounts_isolated
from thirdshift.testing import ScriptedOutside, default_outside
from thirdshift.testing.fakecli import FakeCLIs
from thirdshift.testing.fakemodel import FakeModel
from thirdshift.testing.waits import RecordedWaits
from thirdshift.testing.waits import instant_waits as _instant_waits

# The fixtures, and their types (for annotations: `def test_x(fake_model: FakeModel)`); the
# test doubles themselves, their records and steps, are thirdshift.testing's.
__all__ = [
    "FakeCLIs",
    "FakeModel",
    "RecordedWaits",
    "ScriptedOutside",
    "fake_cli_on_path",
    "fake_model",
    "instant_waits",
    "scripted_outside",
]

MARKER = "thirdshift"
BOTH_PLAY = (
    "fake_cli_on_path and scripted_outside are both in use: Sessions.within in this test "
    "plays scripted_outside's endings, and the fake CLIs play only for the processes the test "
    "starts itself (thirdshift run, subprocess)"
)


@dataclass(frozen=True)
class MarkerOptions:
    """The arguments of the ``thirdshift`` marker; constructing it is what validates them."""

    assert_all_consumed: bool = True


_OPTIONS = pytest.StashKey[MarkerOptions]()
_CALL_PASSED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    guard.register(parser)


def pytest_configure(config: pytest.Config) -> None:
    real_cli.register(config)
    config.addinivalue_line(
        "markers",
        f"{MARKER}(assert_all_consumed=True): settings of the thirdshift fixtures; "
        "assert_all_consumed=False lets a test leave scripted sessions unused.",
    )


def _marker_options(item: pytest.Item) -> MarkerOptions:
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return MarkerOptions()
    known = [field.name for field in fields(MarkerOptions)]
    unknown = [name for name in marker.kwargs if name not in known]
    if marker.args or unknown:
        given = ", ".join([*map(repr, marker.args), *unknown])
        pytest.fail(
            f"@pytest.mark.{MARKER}: unknown argument {given}; it takes only "
            f"{', '.join(f'{name}=' for name in known)} (as keywords)",
            pytrace=False,
        )
    for name, value in marker.kwargs.items():  # every option is a switch
        if not isinstance(value, bool):
            pytest.fail(
                f"@pytest.mark.{MARKER}: {name}= takes True or False, not {value!r}",
                pytrace=False,
            )
    return MarkerOptions(**marker.kwargs)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    # Only thirdshift's tests: a project that installs thirdshift keeps its own tests' signal
    # handlers and interrupts as they are.
    if not guard.is_thirdshifts(item):
        with accounts_isolated():
            return (yield)
    with interrupts.isolated(), accounts_isolated():
        return (yield)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_OPTIONS] = _marker_options(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[_CALL_PASSED] = report.passed
    return report


def _report_unconsumed(request: pytest.FixtureRequest) -> bool:
    """Whether teardown should complain of unused script: the marker allows, the test passed."""
    item = request.node
    options = item.stash.get(_OPTIONS, None) or MarkerOptions()
    return options.assert_all_consumed and item.stash.get(_CALL_PASSED, False)


class _Problems(Protocol):
    def __call__(self, *, include_unconsumed: bool = True) -> list[str]: ...


def _fail_on_problems(
    fixture: str, request: pytest.FixtureRequest, problems: _Problems, *found: str
) -> None:
    """Fail the test at teardown on ``found`` and ``problems``, each failure with its way out."""
    strict = _report_unconsumed(request)
    said = problems(include_unconsumed=strict)
    listed = [*found, *said]
    if not listed:
        return
    ways_out = []
    if strict and len(said) > len(problems(include_unconsumed=False)):  # some script unused
        if fixture == "fake_cli_on_path" and "scripted_outside" in request.fixturenames:
            ways_out.append(
                "scripted_outside is in use too: Sessions.within plays its scripted endings, "
                "and no fake CLI runs"
            )
        ways_out.append(
            f"a test that leaves script unused on purpose says so with "
            f"@pytest.mark.{MARKER}(assert_all_consumed=False)"
        )
    if found:
        ways_out.append(
            "a test that leaves processes running on purpose kills them itself first, with "
            "fake_cli_on_path.kill_survivors()"
        )
    pytest.fail(
        f"{fixture}: " + "; ".join(listed) + "".join(f"\n  ({way})" for way in ways_out),
        pytrace=False,
    )


@pytest.fixture
def scripted_outside(request: pytest.FixtureRequest) -> Iterator[ScriptedOutside]:
    """A fresh ScriptedOutside, used by ``Sessions.within`` wherever no ``outside=`` is given."""
    outside = ScriptedOutside()
    with default_outside(outside):
        yield outside
    # An unscripted session raised UnscriptedSession in the test: a test that failed on it has
    # its failure, and a second error at teardown would say the same; one that swallowed it has
    # none, and is told here.
    swallowed = request.node.stash.get(_CALL_PASSED, False)

    def problems(*, include_unconsumed: bool = True) -> list[str]:
        return outside.problems(include_unconsumed=include_unconsumed, include_unscripted=swallowed)

    _fail_on_problems("scripted_outside", request, problems)


@pytest.fixture
def fake_cli_on_path(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeCLIs]:
    """The fake ``claude``, ``codex``, ``opencode``, ``gemini`` and ``qwen`` first on PATH, with
    their state in this test's tmp_path.

    Script each call with ``fake_cli_on_path.claude.script(...)``; read what the calls did in
    ``fake_cli_on_path.claude.calls``. At teardown, whatever the fakes recorded and is still
    running is killed, and the test fails if anything was: a fake still running, or a process
    one of its steps started; and if a call found no script left, or (when the test passed,
    unless the ``thirdshift`` marker says ``assert_all_consumed=False``) a script was never used.
    """
    if "scripted_outside" in request.fixturenames:
        warnings.warn(BOTH_PLAY, pytest.PytestWarning, stacklevel=1)
    fakes = FakeCLIs(tmp_path / "fakecli")
    # What env() sets: the fakes first on PATH, their state, the fake Claude's temporary folder.
    for name, value in fakes.env().items():
        if os.environ.get(name) != value:
            monkeypatch.setenv(name, value)
    yield fakes
    survivors = fakes.kill_survivors()
    found = [f"still running after the test, now killed: {what}" for what in survivors]
    _fail_on_problems("fake_cli_on_path", request, fakes.problems, *found)


@pytest.fixture
def instant_waits() -> Iterator[RecordedWaits]:
    """Limit waits of this test's sessions take no time; each is recorded in ``.seconds``.

    For in-process tests on the real adapter (``Sessions.within`` with ``fake_cli_on_path`` or
    ``fake_model``); a ``thirdshift run`` subprocess still waits for real.
    """
    with _instant_waits() as waits:
        yield waits
