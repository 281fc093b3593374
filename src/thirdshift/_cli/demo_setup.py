"""What both demos set up (``thirdshift demo`` and ``demo --fleet``): a new git repository
with a test suite, the agent's side of the scenario, the check of ``--folder``, and the
environment the adapter runs the CLI in. Below both, so that neither imports the other.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from thirdshift.testing.steps import Step

RUN_TESTS = """\
#!/bin/sh
# The project's test suite, as far as the demo is concerned.
echo "test_greets_by_name ... ok"
echo "test_greets_nobody ... ok"
echo "test_greets_everybody ... ok"
echo "3 passed"
"""


def new_repository(repo: Path) -> None:
    repo.mkdir(parents=True)
    (repo / "run-tests").write_text(RUN_TESTS)
    (repo / "run-tests").chmod(0o755)
    (repo / "greet.py").write_text('def greet(name):\n    return "Hello"\n')
    identity = ["-c", "user.name=thirdshift demo", "-c", "user.email=demo@example.invalid"]
    for git_args in (["init", "-q"], ["add", "."], [*identity, "commit", "-q", "-m", "A project"]):
        subprocess.run(["git", *git_args], cwd=repo, check=True, capture_output=True)  # noqa: S603


def scenario() -> tuple[tuple[Step, ...], tuple[Step, ...]]:
    """The agent's side of the session and of its Resume, in the steps every double plays
    (:mod:`thirdshift.testing.steps`): the fake CLI acts them out, the fake model has the
    real CLI do them."""
    from thirdshift.testing import steps  # the fakes are test tooling, needed by demos only

    session = (
        steps.run("git status --short"),
        steps.edit("greet.py", 'def greet(name):\n    return f"Hello, {name}!"\n'),
        steps.background("sleep 600; ./run-tests", description="Run the test suite"),
        steps.say("I fixed greet() and started the test suite in the background."),
    )
    resume = (
        steps.run("./run-tests"),
        steps.say(
            "Re-ran the test suite in the foreground: 3 passed. greet() now names the person."
        ),
    )
    return session, resume


@contextlib.contextmanager
def environment(env: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` is ``env`` while active (the adapter finds the CLI on this process's
    PATH and passes it this environment, as it would for a real run), then as it was."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def folder_refused(folder: Path | None, what: str) -> bool:
    """Whether ``--folder`` was given and holds anything: then it says so, on stderr."""
    if folder is None or not _holds_anything(folder):
        return False
    print(
        f"thirdshift: demo --folder {folder} must be a new or empty folder "
        f"(the demo makes {what} there)",
        file=sys.stderr,
    )
    return True


def _holds_anything(folder: Path) -> bool:
    """Whether ``folder`` is there as anything but an empty folder."""
    if not folder.exists():
        return False
    if not folder.is_dir():
        return True
    return any(folder.iterdir())
