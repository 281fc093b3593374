"""``thirdshift check``: do the CLIs on PATH still behave the way thirdshift reads them?

Runs the conformance scenarios of each Harness on its real CLI, under the fake model (a
temporary folder for ``HOME`` and ``CODEX_HOME``, a dummy key, 127.0.0.1 only): no tokens are
spent and no credentials are read. One line per scenario, then the count.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from thirdshift._cli.exits import Exit
from thirdshift._containment import CONTAINMENTS, Containment, checked_containment
from thirdshift._machine.allowed import allowed, resolved
from thirdshift._machine.sandbox.bwrap import unavailable as sandbox_unavailable
from thirdshift._machine.sandbox.bwrap import version as sandbox_version
from thirdshift._programs import find_program
from thirdshift._sandbox import Sandbox
from thirdshift.errors import CLINotFound, ThirdshiftError
from thirdshift.harness import harness_named, harness_names

if TYPE_CHECKING:
    from thirdshift._cli.subparsers import Subparsers
    from thirdshift.testing.conformance import Scenario

VERSION_TIMEOUT = 30.0  # seconds; a CLI's --version that takes longer is reported unknown
_VERSION = re.compile(r"\d+(?:\.\d+)+\S*")


def register(subparsers: Subparsers) -> None:
    command = subparsers.add_parser(
        "check",
        help="check that the CLIs on PATH still behave as thirdshift reads them",
        description=(
            "Run the conformance scenarios against the CLIs on PATH, each against a scripted "
            "model on 127.0.0.1 (temporary HOME, dummy key: no tokens spent, no credentials "
            "read). Run it after upgrading a CLI. It says first which containments this machine "
            "allows (see docs/stopping.md) and whether it can sandbox a session (see "
            "docs/security.md). Exits 0 when every scenario passes, 1 when one fails, 2 when a "
            "Harness's CLI is not installed, the containment is not allowed or --sandbox is "
            "asked for where no sandbox can be made."
        ),
    )
    command.add_argument(
        "--harness",
        action="append",
        metavar="NAME",
        help="a Harness to check (repeatable; default: every Harness whose CLI is on PATH)",
    )
    command.add_argument(
        "--containment",
        choices=CONTAINMENTS,
        default="auto",
        help="play the scenarios under this containment (default: auto, the most isolated "
        "one this machine allows)",
    )
    command.add_argument(
        "--sandbox",
        action="store_true",
        help="play every scenario in a sandbox (thirdshift.Sandbox(); docs/security.md)",
    )
    command.add_argument(
        "--record",
        metavar="DIR",
        type=Path,
        help="also keep each scenario's streams, filtered, under DIR/<cli>/<scenario>/ "
        "(make recordings does it into the package's committed recordings)",
    )
    command.add_argument("--json", action="store_true", help="print one JSON object instead")
    command.set_defaults(handler=run)


@dataclass(frozen=True)
class ScenarioResult:
    """One scenario's result on one CLI."""

    harness: str
    version: str
    scenario: str
    title: str
    differences: tuple[str, ...]
    seconds: float
    stream_changes: tuple[str, ...] = ()
    """Where the stream's event shapes differ from the committed recording: a hint, no fault."""

    @property
    def ok(self) -> bool:
        return not self.differences

    def line(self) -> str:
        verdict = "ok" if self.ok else "FAILED"
        return f"{self.harness} {self.version}  {self.title}  {verdict}  {self.seconds:.1f}s"


def run(args: argparse.Namespace) -> int:
    record: Path | None = args.record
    if record is not None:
        try:
            record.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            print(f"thirdshift: {_cannot_record(record, error)}", file=sys.stderr)
            return Exit.USAGE_ERROR
    try:
        chosen, absent = _harnesses(args.harness)
    except ThirdshiftError as error:
        print(f"thirdshift: {error}", file=sys.stderr)
        return Exit.USAGE_ERROR
    try:
        contained = resolved(args.containment)
    except ThirdshiftError as error:
        print(f"thirdshift: {error}", file=sys.stderr)
        return Exit.USAGE_ERROR
    if args.sandbox and sandbox_unavailable() is not None:
        print(f"thirdshift: cannot play sandboxed: {sandbox_unavailable()}", file=sys.stderr)
        return Exit.USAGE_ERROR
    sandbox = Sandbox() if args.sandbox else None
    try:
        return _check_all(
            chosen, absent, contained, as_json=args.json, record=record, sandbox=sandbox
        )
    except _CannotRecord as error:
        print(f"thirdshift: {error}", file=sys.stderr)
        return Exit.USAGE_ERROR
    except KeyboardInterrupt:
        # The play that was running stopped its CLI; its temporary folder is gone already.
        print("thirdshift: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED


def _check_all(
    chosen: list[tuple[str, str]],
    absent: list[str],
    containment: str,
    *,
    as_json: bool,
    record: Path | None,
    sandbox: Sandbox | None,
) -> int:
    # Imported here: the conformance package pulls in the fake CLIs and the fake model, which
    # no other subcommand needs.
    from thirdshift.testing import conformance
    from thirdshift.testing.conformance._recording import write_version

    if not as_json:
        print(f"containment: {containment} (this machine allows {', '.join(allowed())})")
        print(sandbox_line(sandbox))
        for name in absent:
            print(f"{name}  not on PATH, not checked", flush=True)
    results: list[ScenarioResult] = []
    without: list[str] = []
    for name, program in chosen:
        found = conformance.scenarios(name)
        if not found:
            without.append(name)
            if not as_json:
                print(f"{name}  no conformance scenarios", flush=True)
            continue
        version = cli_version(program)
        if record is not None:
            try:
                write_version(name, version, record)
            except OSError as error:
                raise _CannotRecord(_cannot_record(record, error)) from error
        for scenario in found:
            result = _check(scenario, version, checked_containment(containment), record, sandbox)
            results.append(result)
            if not as_json:
                print(result.line(), flush=True)
                for difference in result.differences:
                    print(f"    {difference}", flush=True)
                for change in result.stream_changes:
                    print(f"    stream, against the recording: {change}", flush=True)
                if not result.ok and scenario.pins:
                    print(f"    (what thirdshift relies on here: {scenario.pins})", flush=True)
    failed = sum(not result.ok for result in results)
    if as_json:
        print(json.dumps(_as_json(results, without, absent, containment, sandbox), indent=2))
    else:
        print(_count(len(results), failed))
    # No scenario played proves nothing about the CLIs: that is not a pass.
    return Exit.FAILED if failed or not results else Exit.OK


def _harnesses(names: list[str] | None) -> tuple[list[tuple[str, str]], list[str]]:
    """(Harness, its program) to check, and the Harnesses left out as their CLI is absent.

    A Harness named on the command line whose CLI is absent is an error instead.
    """
    from thirdshift.testing.conformance._players import program_of

    if names:
        chosen = []
        for name in dict.fromkeys(names):
            harness_named(name)  # an unknown name: ThirdshiftError listing the known ones
            program = program_of(name)
            find_program(program)  # CLINotFound: not installed
            chosen.append((name, program))
        return chosen, []
    present, absent = [], []
    for name in harness_names():
        program = program_of(name)
        try:
            find_program(program)
        except CLINotFound:
            absent.append(name)
            continue
        present.append((name, program))
    if not present:
        names_known = ", ".join(harness_names())
        raise ThirdshiftError(f"none of the Harnesses' CLIs is on PATH ({names_known})")
    return present, absent


def _check(
    scenario: Scenario,
    version: str,
    containment: Containment,
    record: Path | None,
    sandbox: Sandbox | None,
) -> ScenarioResult:
    from thirdshift.testing.conformance import RealPlayer, differences, play
    from thirdshift.testing.conformance import _recording as recordings

    with tempfile.TemporaryDirectory(prefix="thirdshift-check-") as folder:
        played = Path(folder) / "play"
        observed = play(scenario, RealPlayer(), played, containment=containment, sandbox=sandbox)
        fresh = recordings.taken(scenario, observed, played)
    if record is not None:
        try:
            recordings.write(fresh, record)
        except OSError as error:
            raise _CannotRecord(_cannot_record(record, error)) from error
    committed = recordings.read(recordings.STREAMS, scenario.harness, scenario.name)
    changes = (
        ()
        if committed is None
        else recordings.stream_differences(committed, fresh, stopped=scenario.stops)
    )
    return ScenarioResult(
        harness=scenario.harness,
        version=version,
        scenario=scenario.name,
        title=scenario.title,
        differences=tuple(differences(scenario.expected, observed)),
        seconds=observed.seconds,
        stream_changes=tuple(changes),
    )


class _CannotRecord(Exception):
    """A recording could not be written under ``--record DIR`` (mid-run: a full disk, say)."""


def _cannot_record(record: Path, error: OSError) -> str:
    return f"cannot record into {str(record)!r}: {error.strerror or error}"


def cli_version(program: str) -> str:
    """The version ``program --version`` prints (``2.1.197``), or ``unknown version``.

    Run with a throw-away ``HOME``, so that it reads none of the user's settings.
    """
    with tempfile.TemporaryDirectory(prefix="thirdshift-check-") as home:
        env = {**os.environ, "HOME": home, "CODEX_HOME": home}
        try:
            done = subprocess.run(  # noqa: S603 - argv is ours, no shell
                [find_program(program), "--version"],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=VERSION_TIMEOUT,
                start_new_session=True,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired, CLINotFound):
            return "unknown version"
    found = _VERSION.search(done.stdout) or _VERSION.search(done.stderr)
    return found.group(0) if found else "unknown version"


def _count(total: int, failed: int) -> str:
    if not total:
        return "0 scenarios: nothing was checked"
    if failed:
        return f"{total} scenarios: {total - failed} ok, {failed} FAILED"
    return f"{total} scenarios: all ok"


def sandbox_line(sandbox: Sandbox | None) -> str:
    """Whether this machine can sandbox a session, and whether the scenarios play in one."""
    why = sandbox_unavailable()
    if why is not None:
        return f"sandbox: unavailable here: {why}"
    played = "the scenarios play sandboxed" if sandbox is not None else "available (--sandbox)"
    return f"sandbox: {played} ({sandbox_version() or 'bwrap'})"


def _as_json(
    results: list[ScenarioResult],
    without: list[str],
    absent: list[str],
    containment: str,
    sandbox: Sandbox | None,
) -> dict[str, Any]:
    why = sandbox_unavailable()
    return {
        "containment": {"used": containment, "allowed": list(allowed())},
        "sandbox": {"used": sandbox is not None, "available": why is None, "why_not": why},
        "scenarios": [
            {
                "harness": result.harness,
                "version": result.version,
                "scenario": result.scenario,
                "title": result.title,
                "ok": result.ok,
                "seconds": round(result.seconds, 1),
                "differences": list(result.differences),
                "stream_changes": list(result.stream_changes),
            }
            for result in results
        ],
        "without_scenarios": without,
        "not_on_path": absent,
        "passed": sum(result.ok for result in results),
        "failed": sum(not result.ok for result in results),
    }
