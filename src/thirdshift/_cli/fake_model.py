"""``thirdshift fake-model``: the fake model served from a terminal, to try a real CLI by hand.

It listens on 127.0.0.1, prints to stdout the shell lines that point the real CLIs at it (the
``export``/``unset`` lines of :func:`thirdshift.testing.fakemodel._environment.fake_model_env`,
with a ``HOME`` of its own where each CLI's settings are written), then says on stderr what it
answered to each request, until Ctrl-C or SIGTERM. Each session of a named CLI (each run,
each Resume) plays the next ``--script`` file (:mod:`.model_script`), the last one every
session after it; without one, a session ends its turn with the fake model's default reply.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from thirdshift._cli.exits import Exit
from thirdshift._cli.model_script import ScriptFileError, read_script
from thirdshift._shown import shown
from thirdshift.testing.fakemodel import ModelRequest, ScriptedModel
from thirdshift.testing.fakemodel._admission import new_key
from thirdshift.testing.fakemodel._environment import fake_model_env
from thirdshift.testing.fakemodel._script import DEFAULT_FINAL_TEXT, Move
from thirdshift.testing.fakemodel._server import LOOPBACK, ModelServer
from thirdshift.testing.steps import Step

if TYPE_CHECKING:
    from thirdshift._cli.subparsers import Subparsers

CLIS = ("claude", "codex", "opencode", "gemini", "qwen")
TRY_IT = {
    "claude": "claude -p --permission-mode auto 'Say hi.'",
    "codex": (
        "codex exec --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check 'Say hi.'"
    ),
    "opencode": "opencode run --auto 'Say hi.'",
    "gemini": "gemini -y -p 'Say hi.'",
    "qwen": "qwen -y -p 'Say hi.'",
}
"""A first command to paste for each CLI, once the environment is exported: headless, its tools
allowed (a script's run steps need them), as thirdshift's Harnesses run it."""
SETTINGS_FILES = {
    "claude": ".claude/settings.json",
    "codex": ".codex/config.toml",
    "opencode": ".config/opencode/opencode.json",
    "gemini": ".gemini/settings.json",
    "qwen": ".qwen/settings.json",
}
"""What the fake model's environment writes under HOME for each CLI (checked by the tests)."""
HOME_MARK = ".thirdshift-fake-model"
"""Left in a HOME this command prepared, so that a later run may prepare it again."""
SERVING = "# serving until Ctrl-C; each request answered is a line on stderr"
"""The last line on stdout: everything to paste is above it."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SHUTDOWN_POLL = 0.05  # seconds: how soon a stop is noticed by serve_forever


def register(subparsers: Subparsers) -> None:
    command = subparsers.add_parser(
        "fake-model",
        help="serve the fake model on 127.0.0.1, to run a real CLI against it by hand",
        description=(
            "Serve thirdshift's scripted model on 127.0.0.1 until Ctrl-C. Prints on stdout the "
            "export lines that point the real CLIs at it (a HOME of their own, where their "
            "settings are written; paste them into another shell), and on stderr one line per "
            "request answered. Each session of a named CLI plays the next --script file (a JSON "
            'list of steps such as [{"run": "ls"}, {"say": "Listed them."}]), and every session '
            f"after the last plays the last; without one it ends the turn saying "
            f"{DEFAULT_FINAL_TEXT!r}."
        ),
    )
    command.add_argument(
        "--port",
        type=_port,
        default=0,
        help="the port to listen on (default: a free one, printed)",
    )
    command.add_argument(
        "--cli",
        nargs="+",
        choices=CLIS,
        metavar="CLI",
        help=f"the CLIs the script plays for: {', '.join(CLIS)} (default: all); "
        "the others are answered that there is no script",
    )
    command.add_argument(
        "--script",
        type=Path,
        action="append",
        metavar="FILE",
        help="a JSON list of steps, one session's script; repeat it for each next session "
        "(the first session plays the first, every session after the last the last; see "
        "docs/fake-model.md)",
    )
    command.add_argument(
        "--home",
        type=Path,
        metavar="DIR",
        help="the HOME to prepare for the CLIs: a new or empty folder, or one this command "
        "prepared before (default: a new temporary folder)",
    )
    command.set_defaults(handler=run)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, not {port}")
    return port


class EverySession(ScriptedModel):
    """One CLI's side of the fake model that plays ``scripts`` to its sessions in turn, the
    last to every session after it (None: no script, every scripted request refused; none
    given: each session ends its turn with the default reply), and hands each request
    answered to ``report``.

    Nothing is kept of the requests: the server may run for days, and each body can be large.
    """

    def __init__(
        self,
        cli: str,
        scripts: tuple[tuple[Step, ...], ...] | None,
        report: Callable[[str, ModelRequest], None],
    ) -> None:
        super().__init__(cli)
        self._scripts = None if scripts is None else list(scripts or [()])
        self._lock = threading.Lock()
        self._report = report

    def next_move(self, session: str, turn: str) -> Move | None:
        move = super().next_move(session, turn)
        if move is None and self._scripts is not None:
            with self._lock:  # requests come from the server's threads
                steps = self._scripts.pop(0) if len(self._scripts) > 1 else self._scripts[0]
            self.script(*steps)  # a session with its script played takes the next
            move = super().next_move(session, turn)
        return move

    def keep(self, request: ModelRequest) -> None:
        """Say each request on stderr instead of keeping it: a server left running for hours
        must not hold every request it answered."""
        self._report(self.cli, request)


class _Reporter:
    """The stderr line for each request answered, whole, from any of the server's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __call__(self, cli: str, request: ModelRequest) -> None:
        session = f" session {request.session_id}" if request.session_id else ""
        line = shown(f"{cli}{session}: {request.path}: {request.reply}")
        with self._lock:
            try:
                print(f"thirdshift fake-model: {line}", file=sys.stderr, flush=True)
            except (OSError, ValueError):
                pass  # stderr is gone: the requests are still answered


def run(args: argparse.Namespace) -> int:
    try:
        scripts = tuple(read_script(path) for path in args.script or ())
    except ScriptFileError as error:
        return _usage_error(f"fake-model --script: {error}")
    home_problem = None if args.home is None else _unusable_home(args.home)
    if home_problem is not None:
        return _usage_error(f"fake-model --home {args.home} {home_problem}")
    named = tuple(args.cli or CLIS)
    report = _Reporter()
    models = {cli: EverySession(cli, scripts if cli in named else None, report) for cli in CLIS}
    key = new_key()
    try:
        server = ModelServer(models, key=key, port=args.port)
    except OSError as error:
        reason = error.strerror or error
        return _usage_error(f"fake-model: cannot listen on {LOOPBACK} port {args.port}: {reason}")
    with _stopped_by_signals():
        try:
            home = args.home or Path(tempfile.mkdtemp(prefix="thirdshift-fake-model-home-"))
            url = f"http://{LOOPBACK}:{server.port}"
            try:
                env = fake_model_env(url, home, key=key)
                (home / HOME_MARK).touch()
            except OSError as error:
                return _usage_error(f"fake-model: cannot prepare {home}: {error.strerror or error}")
            for line in _instructions(url, home.absolute(), named, env, os.environ):
                print(line)
            sys.stdout.flush()
            server.serve_forever(poll_interval=_SHUTDOWN_POLL)
        except (KeyboardInterrupt, _Stop):
            pass
        finally:
            server.closing.set()  # requests held by hang() or stall() let go
            server.server_close()
    print("thirdshift fake-model: stopped", file=sys.stderr)
    return Exit.OK


def _usage_error(message: str) -> int:
    print(f"thirdshift: {shown(message)}", file=sys.stderr)
    return Exit.USAGE_ERROR


def _unusable_home(home: Path) -> str | None:
    """Why ``home`` must not be given the fake model's settings, or None: it may.

    The settings overwrite each CLI's own (``~/.claude/settings.json``...), so a HOME that
    holds anything else, the user's real one above all, is refused.
    """
    if not home.exists():
        return None
    if not home.is_dir():
        return "is not a folder"
    if (home / HOME_MARK).exists() or not any(home.iterdir()):
        return None
    return (
        "must be a new or empty folder, or one thirdshift fake-model prepared before "
        "(the CLIs' settings are written there)"
    )


def _instructions(
    url: str, home: Path, named: Sequence[str], env: Mapping[str, str], base: Mapping[str, str]
) -> Iterator[str]:
    """What stdout says: comments, the lines to paste into a shell, and a command to try."""
    yield f"# thirdshift fake model on {url}; paste these lines into another shell:"
    yield f"# HOME={home} holds each CLI's settings: " + ", ".join(
        SETTINGS_FILES[cli] for cli in CLIS
    )
    yield from shell_lines(env, base)
    yield "# then run, for example (pinned CLIs: PATH=$PWD/clis/node_modules/.bin:$PATH):"
    for cli in named:
        yield f"#   {TRY_IT[cli]}"
    yield SERVING


def shell_lines(env: Mapping[str, str], base: Mapping[str, str]) -> list[str]:
    """The ``unset`` and ``export`` lines that turn environment ``base`` into ``env``.

    Values are shell-quoted; a name no shell can take (``base`` may hold anything) is left out.
    """
    unset = [f"unset {name}" for name in sorted(base) if name not in env and _NAME.match(name)]
    export = [
        f"export {name}={shlex.quote(value)}"
        for name, value in sorted(env.items())
        if base.get(name) != value and _NAME.match(name)
    ]
    return unset + export


class _Stop(Exception):
    """SIGTERM or SIGHUP arrived: stop serving, as for Ctrl-C."""


@contextmanager
def _stopped_by_signals() -> Iterator[None]:
    def stop(signum: int, frame: FrameType | None) -> None:
        raise _Stop

    saved = {number: signal.signal(number, stop) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)
