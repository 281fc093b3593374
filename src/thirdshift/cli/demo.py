"""``thirdshift demo``: a session whose background work is killed, and its one Resume.

Everything is real but the agent: a new git repository, the real adapter through
``Sessions.within``, real processes, real Session logs. The agent is the fake ``claude`` that
ships in ``thirdshift.testing``, scripted to leave its test run in the background and end its
turn, as agents do, and then to re-run it in the foreground when resumed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from thirdshift import interrupts
from thirdshift.cli.inspect import as_text, inspect_log
from thirdshift.errors import ThirdshiftError
from thirdshift.harness import claude
from thirdshift.logs import Logs
from thirdshift.progress import to_stderr
from thirdshift.sessions import Sessions

if TYPE_CHECKING:
    from thirdshift.cli import Subparsers

INTERRUPTED = 130
RUN_TESTS = """\
#!/bin/sh
# The project's test suite, as far as the demo is concerned.
echo "test_greets_by_name ... ok"
echo "test_greets_nobody ... ok"
echo "test_greets_everybody ... ok"
echo "3 passed"
"""


def register(subparsers: Subparsers) -> None:
    command = subparsers.add_parser(
        "demo",
        help="watch a session with a fake agent lose its test run and be resumed once",
        description=(
            "Run a session of a fake Claude (no network, no model) in a new git repository: "
            "it leaves its test run in the background and ends its turn, and thirdshift "
            "resumes it once. Shows the progress lines, the final message, the Session logs "
            "and `thirdshift inspect` of the first one."
        ),
    )
    command.add_argument(
        "--folder",
        type=Path,
        help="where to make the demo's repository and logs (default: a new temporary folder)",
    )
    command.set_defaults(handler=run)


def _say(text: str = "") -> None:
    print(text, flush=True)


def _new_repository(repo: Path) -> None:
    repo.mkdir(parents=True)
    (repo / "run-tests").write_text(RUN_TESTS)
    (repo / "run-tests").chmod(0o755)
    (repo / "greet.py").write_text('def greet(name):\n    return "Hello"\n')
    identity = ["-c", "user.name=thirdshift demo", "-c", "user.email=demo@example.invalid"]
    for git_args in (["init", "-q"], ["add", "."], [*identity, "commit", "-q", "-m", "A project"]):
        subprocess.run(["git", *git_args], cwd=repo, check=True, capture_output=True)  # noqa: S603


def run(args: argparse.Namespace) -> int:
    # Imported here: the fakes are test tooling, needed by this command only.
    from thirdshift.testing import fakecli as fake

    folder = args.folder or Path(tempfile.mkdtemp(prefix="thirdshift-demo-"))
    repo, logs_dir = folder / "repo", folder / "logs"
    try:
        _new_repository(repo)
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"thirdshift: could not make the demo repository in {repo}: {error}", file=sys.stderr)
        return 1
    fakes = fake.FakeCLIs.create(folder / "fake-cli")  # a rerun in --folder starts afresh
    fakes.claude.script(
        fake.run("git status --short"),
        fake.edit("greet.py", 'def greet(name):\n    return f"Hello, {name}!"\n'),
        fake.background("sleep 600; ./run-tests", description="Run the test suite"),
        fake.say("I fixed greet() and started the test suite in the background."),
    )
    fakes.claude.script(
        fake.run("./run-tests"),
        fake.say(
            "Re-ran the test suite in the foreground: 3 passed. greet() now names the person."
        ),
    )
    # The adapter finds the CLI on this process's PATH, as it would find the real one.
    os.environ.update(fakes.env())

    _say("thirdshift demo")
    _say()
    _say("The agent in this demo is a FAKE: the fake `claude` that ships in thirdshift.testing,")
    _say("a real program scripted to behave like Claude Code. No network, no")
    _say("model. It fixes a function, starts the test suite in the background and ends its")
    _say("turn, which kills the test run; thirdshift resumes the session once to re-run it.")
    _say()
    _say(f"  repository: {repo}")
    _say(f"  logs:       {logs_dir}")
    _say()

    interrupts.install()
    logs = Logs(logs_dir, "demo")
    sessions: Sessions | None = None
    try:
        with Sessions.within(logs, repo, claude(), progress=to_stderr) as sessions:
            final_message = sessions.run_to_final_message(
                "implement", "Fix greet() so it names the person."
            )
    except KeyboardInterrupt:
        print("thirdshift: interrupted", file=sys.stderr)
        return INTERRUPTED
    except ThirdshiftError as error:
        print(f"thirdshift: {error}", file=sys.stderr)
        return 1

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
        _say(f"$ thirdshift inspect {session_logs[0]}")
        _say(as_text(inspect_log(session_logs[0], None)).rstrip("\n"))
    _say()
    _say(f"Everything the demo made is in {folder}; remove it when you are done.")
    return 0
