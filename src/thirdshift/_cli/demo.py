"""``thirdshift demo``: a session whose background work is killed, and its one Resume.

Everything is real but the agent: a new git repository, the real adapter through
``Sessions.within``, real processes, real Session logs. The agent is the fake ``claude`` that
ships in ``thirdshift.testing``, scripted to leave its test run in the background and end its
turn, as agents do, and then to re-run it in the foreground when resumed.

``--real`` plays the same scenario on the real ``claude`` on PATH, with only its model faked
(:mod:`thirdshift.testing.fakemodel` on 127.0.0.1): the script is written once, in the step
vocabulary the fake CLIs and the fake model share.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from thirdshift import interrupts
from thirdshift._cli.check import cli_version
from thirdshift._cli.demo_setup import environment, folder_refused, new_repository, scenario
from thirdshift._cli.exits import Exit
from thirdshift._cli.inspect import as_text, inspect_log
from thirdshift._logs import Logs
from thirdshift._programs import find_program
from thirdshift._progress import to_stderr
from thirdshift._sandbox import Sandbox
from thirdshift._sessions import Sessions
from thirdshift.errors import CLINotFound, ThirdshiftError
from thirdshift.harness import claude

if TYPE_CHECKING:
    from thirdshift._cli.subparsers import Subparsers


def register(subparsers: Subparsers) -> None:
    command = subparsers.add_parser(
        "demo",
        help="watch a session with a fake agent lose its test run and be resumed once",
        description=(
            "Run a session of a fake Claude (no network, no model) in a new git repository: "
            "it leaves its test run in the background and ends its turn, and thirdshift "
            "resumes it once. Shows the progress lines, the final message, the Session logs "
            "and `thirdshift inspect` of the first one. With --real, the real claude on PATH "
            "plays it against a scripted model on 127.0.0.1 (no API key, no tokens)."
        ),
    )
    command.add_argument(
        "--real",
        action="store_true",
        help="run the real claude on PATH, with only its model faked (on 127.0.0.1)",
    )
    command.add_argument(
        "--fleet",
        action="store_true",
        help=(
            "run seven sessions on three hosts through a Temporal dev server on 127.0.0.1, "
            "one host's worker killed mid-session "
            "(needs thirdshift[temporal] and the temporal CLI; `make demo-fleet` sets them up)"
        ),
    )
    command.add_argument(
        "--sandbox",
        action="store_true",
        help="run the session in a sandbox, as thirdshift run --sandbox does (docs/security.md)",
    )
    command.add_argument(
        "--folder",
        type=Path,
        help="where to make the demo's repository and logs (default: a new temporary folder)",
    )
    command.set_defaults(handler=run)


def _say(text: str = "") -> None:
    print(text, flush=True)


def run(args: argparse.Namespace) -> int:
    if args.fleet:
        if args.sandbox:
            print(
                "thirdshift: demo --fleet sandboxes its sessions as a worker does: drop --sandbox",
                file=sys.stderr,
            )
            return Exit.USAGE_ERROR
        if args.real:
            print("thirdshift: demo --fleet plays on the fake claude: drop --real", file=sys.stderr)
            return Exit.USAGE_ERROR
        from thirdshift._cli.demo_fleet import run_fleet

        return run_fleet(args)
    if args.real:
        try:
            claude_program = find_program("claude")
        except CLINotFound:
            from thirdshift.testing.fakemodel._installing import install_command

            print(
                "thirdshift: demo --real needs the real claude on PATH: in a checkout of "
                "thirdshift, `make clis` installs the pinned CLIs and "
                "`PATH=$PWD/clis/node_modules/.bin:$PATH` puts them first; elsewhere, "
                f"`{install_command('claude')}` (or run the demo without --real)",
                file=sys.stderr,
            )
            return Exit.USAGE_ERROR
    if folder_refused(args.folder, "its repository and logs"):
        return Exit.USAGE_ERROR
    folder = args.folder or Path(tempfile.mkdtemp(prefix="thirdshift-demo-"))
    repo, logs_dir = folder / "repo", folder / "logs"
    try:
        new_repository(repo)
    except OSError as error:
        reason = error.strerror or error
        print(
            f"thirdshift: could not make the demo repository in {repo}: {reason}", file=sys.stderr
        )
        return Exit.FAILED
    except subprocess.CalledProcessError as error:
        print(f"thirdshift: could not make the demo repository in {repo}: {error}", file=sys.stderr)
        return Exit.FAILED
    sandbox = Sandbox() if args.sandbox else None
    if args.real:
        return _on_the_real_claude(claude_program, folder, repo, logs_dir, sandbox)
    return _on_the_fake_claude(folder, repo, logs_dir, sandbox)


def _on_the_fake_claude(folder: Path, repo: Path, logs_dir: Path, sandbox: Sandbox | None) -> int:
    # Imported here: the fakes are test tooling, needed by this command only.
    from thirdshift.testing import fakecli

    fakes = fakecli.FakeCLIs.create(folder / "fake-cli")  # a rerun in --folder starts afresh
    for session in scenario():
        fakes.claude.script(*session)

    _say("thirdshift demo")
    _say()
    _say("The agent in this demo is a FAKE: the fake `claude` that ships in thirdshift.testing,")
    _say("a real program scripted to behave like Claude Code. No network, no")
    _say("model. It fixes a function, starts the test suite in the background and ends its")
    _say("turn, which kills the test run; thirdshift resumes the session once to re-run it.")
    _say("(`thirdshift demo --real` plays the same on the real Claude Code, if you have it.)")
    _say()
    _say(f"  repository: {repo}")
    _say(f"  logs:       {logs_dir}")
    _say()
    with environment({**os.environ, **fakes.env()}):
        return _play(folder, logs_dir, repo, sandbox)


def _on_the_real_claude(
    program: str, folder: Path, repo: Path, logs_dir: Path, sandbox: Sandbox | None
) -> int:
    from thirdshift.testing import fakemodel

    version = cli_version("claude")
    home = folder / "home"
    _say("thirdshift demo --real")
    _say()
    _say("The agent in this demo is the REAL Claude Code; only its model is a fake: a scripted")
    _say("model server on 127.0.0.1. No API key, no tokens, no network, and Claude's HOME is a")
    _say("new folder, so your settings and credentials are not read. Claude runs its real tools:")
    _say("it fixes a function, starts the test suite in the background and ends its turn; about")
    _say("5 s later it kills the test run as it exits, and thirdshift resumes the same Claude")
    _say("session once to re-run it.")
    _say()
    _say(f"  claude:     {program} ({version})")
    _say(f"  repository: {repo}")
    _say(f"  logs:       {logs_dir}")
    _say(f"  HOME:       {home}")
    _say()
    with fakemodel.FakeModel() as model:
        for session in scenario():
            model.claude.script(*session)
        with environment(model.env(home)):  # its TMPDIR too is in the demo's folder
            code = _play(folder, logs_dir, repo, sandbox)
        problems = model.problems()
    if code == 0 and problems:
        # The real Claude asked something the demo's script did not expect: say what.
        for problem in problems:
            print(f"thirdshift: the fake model: {problem}", file=sys.stderr)
        return Exit.FAILED
    return code


def _play(folder: Path, logs_dir: Path, repo: Path, sandbox: Sandbox | None) -> int:
    """The session and its Resume, then what they left: the final message, logs, inspect."""
    interrupts.install()
    logs = Logs(logs_dir, "demo")
    sessions: Sessions | None = None
    try:
        with Sessions.within(logs, repo, claude(sandbox=sandbox), progress=to_stderr) as sessions:
            final_message = sessions.run_to_final_message(
                "implement", "Fix greet() so it names the person."
            )
    except KeyboardInterrupt:
        print("thirdshift: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED
    except ThirdshiftError as error:
        print(f"thirdshift: {error}", file=sys.stderr)
        return Exit.FAILED

    session_logs = sorted(logs_dir.glob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
    _say()
    _say("Final message (what run_to_final_message returned):")
    _say(f"  {final_message}")
    _say()
    _say("Session logs (the CLI's stdout, byte for byte; its stderr beside each, as .stderr):")
    for log in session_logs:
        _say(f"  {log}")
    if session_logs:
        _say()
        _say(f"$ thirdshift inspect {shlex.quote(str(session_logs[0]))}")
        _say(as_text(inspect_log(session_logs[0], None)).rstrip("\n"))
    _say()
    _say(f"Everything the demo made is in {folder}; remove it when you are done.")
    return Exit.OK
