"""Which tests are thirdshift's, and the guard against a real agent CLI a test forgot to fake.

A test is thirdshift's when it takes one of the plugin's fixtures or carries one of its
markers: only those run inside ``interrupts.isolated()``, and only the others are guarded.

The guard: a test that is not thirdshift's and runs a session through ``Sessions.within`` on
a CLI found on PATH by its Harness's name outside the test's temporary folders (where the
fakes, and any stand-in a test writes, are) would run the user's real agent CLI on the user's
credentials. Such a session fails the test in one line instead, before anything starts. The
ini option ``thirdshift_guard_real_clis = false`` turns the guard off.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from thirdshift._outside import Ended, Outside, WithinContext
from thirdshift._programs import find_program
from thirdshift._wiring import around_adapter
from thirdshift.errors import CLINotFound

FIXTURES = ("scripted_outside", "fake_cli_on_path", "fake_model", "instant_waits")
MARKERS = ("thirdshift", "real_cli")
GUARD_INI = "thirdshift_guard_real_clis"


def register(parser: pytest.Parser) -> None:
    parser.addini(
        GUARD_INI,
        type="bool",
        default=True,
        help="fail a test that runs a real agent CLI (one on PATH outside the test's "
        "temporary folders) without a thirdshift fixture or the real_cli marker",
    )


def is_thirdshifts(item: pytest.Item) -> bool:
    """Whether ``item`` takes a thirdshift fixture or carries a thirdshift marker."""
    taken = getattr(item, "fixturenames", ())
    return any(name in taken for name in FIXTURES) or any(
        item.get_closest_marker(name) is not None for name in MARKERS
    )


@pytest.fixture(autouse=True)
def _thirdshift_real_cli_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    if is_thirdshifts(request.node) or not request.config.getini(GUARD_INI):
        yield
        return
    factory: pytest.TempPathFactory = request.getfixturevalue("tmp_path_factory")
    with around_adapter(_Guard(factory.getbasetemp().resolve())):
        yield


class _Guard:
    """Hands each real adapter on with the check before its sessions (an ``Around``)."""

    def __init__(self, temporary: Path) -> None:
        self._temporary = temporary

    def around(self, outside: Outside, context: WithinContext) -> Outside:
        return _Guarded(outside, context, self._temporary)


class _Guarded:
    def __init__(self, real: Outside, context: WithinContext, temporary: Path) -> None:
        self._real = real
        self._context = context
        self._temporary = temporary

    def run_session(self, kind: str, resume: str | None, prompt: str, log: Path) -> Ended:
        refused = self._refused()
        if refused is not None:
            pytest.fail(refused, pytrace=False)
        return self._real.run_session(kind, resume, prompt, log)

    def _refused(self) -> str | None:
        # The CLI by its Harness's name, as every built-in runs it; not by the Harness's
        # invocation, which a test's own Harness may record or refuse.
        name = self._context.choice.harness.name
        if os.sep in name or not name:
            return None
        try:
            program = Path(find_program(name)).resolve()
        except CLINotFound:
            return None  # the adapter says so, as it would anywhere
        if program.is_relative_to(self._temporary):
            return None
        return (
            f"thirdshift: this test would run the real {name} ({program}) on your credentials: "
            "give it a thirdshift fixture (fake_cli_on_path, fake_model, scripted_outside) or "
            f'@pytest.mark.real_cli("{name}") ({GUARD_INI} = false in the ini turns this off)'
        )

    def report(self, line: str) -> None:
        self._real.report(line)

    def wait(self, seconds: float) -> None:
        self._real.wait(seconds)

    def cancel(self) -> None:
        self._real.cancel()
