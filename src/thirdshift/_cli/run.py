"""``thirdshift run``: one session, with the Resume rules, from a terminal or a script."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from thirdshift import interrupts
from thirdshift._budget import Budget
from thirdshift._cli import durations
from thirdshift._cli.as_json import dumps, failure_json, record_json
from thirdshift._cli.exits import Exit, for_signal
from thirdshift._cli.notify_command import notify_command
from thirdshift._containment import CONTAINMENTS
from thirdshift._environment import ENV_POLICIES
from thirdshift._json_form import absolute
from thirdshift._logs import Logs, check_plain_name
from thirdshift._machine.allowed import resolved
from thirdshift._records import SessionRecord
from thirdshift._sandbox import Sandbox
from thirdshift._sessions import Sessions
from thirdshift._shown import shown
from thirdshift._watchdogs import Watchdogs
from thirdshift.errors import (
    AuthFailed,
    ConfigurationError,
    Interrupted,
    SessionFailed,
    ThirdshiftError,
)
from thirdshift.harness import harness_named, harness_names
from thirdshift.harness._base import NO_ENV, made_choice

# What run's exit codes mean, for its --help (the README's table says it of every command).
RUN_EXITS = (
    f"{Exit.OK.value} success, {Exit.FAILED.value} a failed session, {Exit.USAGE_ERROR.value} a "
    f"usage error, {Exit.TEMPORARY_FAILURE.value} a failure on an API limit (try again later), "
    f"{Exit.AUTH_FAILED.value} credentials refused, {Exit.HUNG_UP.value}, "
    f"{Exit.INTERRUPTED.value} and {Exit.TERMINATED.value} stopped by SIGHUP, SIGINT and SIGTERM"
)
DEFAULT_LOGS = Path("~/.thirdshift/logs")


def register(commands: argparse._SubParsersAction[Any]) -> None:
    parser = commands.add_parser(
        "run",
        usage="%(prog)s [options] [PROMPT | -] [-- CLI_ARGS ...]",
        help="run one session (resumed once if it ends with its background work killed)",
        description=(
            "Run one agent session in a worktree. Progress lines go to stderr, the final "
            "message to stdout. Arguments after -- go to the CLI as they are. Durations: 90s, "
            f"30m, 2h, 1h30m, or seconds. Exit codes: {RUN_EXITS}."
        ),
    )
    parser.add_argument(
        "--harness", default="claude", help=f"one of {', '.join(harness_names())} (default: claude)"
    )
    parser.add_argument("--model", help="the model to ask the CLI for (default: its own)")
    parser.add_argument("--effort", help="the reasoning effort (default: the CLI's own)")
    parser.add_argument("--worktree", type=_folder, default=Path("."), help="default: .")
    parser.add_argument(
        "--logs", type=_folder, default=DEFAULT_LOGS, help=f"log folder (default: {DEFAULT_LOGS})"
    )
    parser.add_argument(
        "--name",
        type=_named,
        help="first part of log names (default: the worktree's name; root for /)",
    )
    parser.add_argument("--kind", default="session", help="the session's label (default: session)")
    parser.add_argument("--skills", type=_folder, help="a folder of skill folders to copy in")
    parser.add_argument(
        "--env-policy",
        choices=ENV_POLICIES,
        default=None,
        help="what the CLI gets of this environment: all of it (inherit, the default without "
        "--sandbox) or minimal (PATH, HOME, locale, the CLI's own keys; the default with it)",
    )
    sandbox = parser.add_argument_group(
        "sandbox", "run the session inside a boundary (docs/security.md)"
    )
    sandbox.add_argument(
        "--sandbox",
        action="store_true",
        help="run the session in a sandbox: the system read-only, a private HOME and /tmp, the "
        "worktree read-write, no network but the CLI's model API",
    )
    sandbox.add_argument(
        "--allow-net",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="an endpoint the sandboxed session may reach besides its model API (port 443 "
        "unless given; repeatable)",
    )
    sandbox.add_argument(
        "--allow-read",
        action="append",
        default=[],
        type=_folder,
        metavar="PATH",
        help="a path the sandboxed session sees read-only (repeatable)",
    )
    sandbox.add_argument(
        "--allow-write",
        action="append",
        default=[],
        type=_folder,
        metavar="PATH",
        help="a path the sandboxed session sees read-write (repeatable)",
    )
    sandbox.add_argument(
        "--max-pids",
        metavar="N",
        help="the most processes the sandboxed session may have at once (default: 4096)",
    )
    sandbox.add_argument(
        "--max-memory",
        metavar="BYTES",
        help="the most memory its processes may use together: bytes, or 512M, 2G (default: no cap)",
    )
    parser.add_argument(
        "--max-log-bytes",
        metavar="BYTES",
        default=str(1 << 30),
        help="stop a session whose Session log reaches this many bytes: bytes, or 64M, 1G "
        "(default: 1G; 0: no cap)",
    )
    parser.add_argument(
        "--containment",
        choices=CONTAINMENTS,
        default="auto",
        help="how the session's processes are held for the stop: auto (the default: the most "
        "isolated this machine allows), cgroup, namespace or scan (see `thirdshift check`)",
    )
    parser.add_argument(
        "--stop-grace",
        type=durations.seconds,
        default=10.0,
        metavar="DURATION",
        help="how long each stop signal may take before the next, then SIGKILL (default: 10s)",
    )
    parser.add_argument(
        "--wait-for-limits",
        type=durations.limit,
        default=None,
        metavar="DURATION",
        help="wait up to this long in all for API limits to pass, then carry on "
        "(default: 0, fail at once)",
    )
    parser.add_argument(
        "--idle-timeout",
        type=durations.limit,
        default=1800.0,
        metavar="DURATION",
        help="stop a session whose CLI writes nothing for this long (default: 30m; 0: never)",
    )
    parser.add_argument(
        "--after-result-timeout",
        type=durations.limit,
        default=60.0,
        metavar="DURATION",
        help="stop a CLI still running this long after its result; the result stands "
        "(default: 60s; 0: never)",
    )
    parser.add_argument(
        "--timeout",
        type=durations.limit,
        default=None,
        metavar="DURATION",
        help="stop a session that runs longer than this (default: 0, no limit)",
    )
    parser.add_argument(
        "--still-running-every",
        type=durations.limit,
        default=300.0,
        metavar="DURATION",
        help="after this long with no progress line, say what still runs (default: 5m; 0: never)",
    )
    # Read as text and checked by Budget itself, so that a bad value is one line and exit 2.
    parser.add_argument(
        "--budget-usd",
        metavar="X",
        help="stop once the sessions have spent this many dollars as the stream reports cost "
        "(Claude, opencode; default: no limit)",
    )
    parser.add_argument(
        "--budget-tokens",
        metavar="N",
        help="stop once the sessions have used this many input plus output tokens "
        "(default: no limit)",
    )
    parser.add_argument(
        "--budget-turns",
        metavar="N",
        help="stop once the sessions have taken this many model turns (default: no limit)",
    )
    parser.add_argument(
        "--notify-command",
        metavar="CMD",
        help="run CMD (split as a shell would, run without one) on each event: a session parked "
        "for a limit, resumed, failed, the run finished; one JSON object on its stdin",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the sessions' records as one JSON object on stdout, not the final message",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail (exit 1) when the Resume also ends with its background work killed, "
        "rather than carry on",
    )
    # nargs="*": an unquoted prompt of several words is told how to quote it, not refused as
    # "unrecognized arguments".
    parser.add_argument(
        "prompt", nargs="*", default=["-"], help="the prompt (quoted), or - to read stdin"
    )
    parser.set_defaults(handler=run, cli_args=())


def _stdin_text() -> str:
    """Stdin to its end: a byte that is not UTF-8 kept as a surrogate escape, to reach the CLI
    as it was, as one in an argument does (the locale's own decoding may refuse it)."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream put in its place (a test's, an embedding's)
        return sys.stdin.read()
    data: bytes = stream.read()
    return data.decode("utf-8", "surrogateescape")


def _folder(text: str) -> Path:
    """A folder argument: ``Path("")`` would quietly be the current folder."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path names no folder (. is the current one)")
    return Path(text)


def _named(text: str) -> str:
    """A name argument: an empty one would quietly be the default."""
    if not text:
        raise argparse.ArgumentTypeError("an empty name; leave the option out for the default")
    return text


def _default_name(worktree: Path) -> str:
    """The worktree folder's name; ``root`` for ``/``, which has none."""
    return worktree.resolve().name or "root"


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def byte_count(flag: str, text: str) -> int:
    """``text`` as bytes: a whole number, with ``K``, ``M``, ``G`` or ``T`` (powers of 1024,
    ``iB`` or ``B`` after them allowed); ``ValueError`` naming ``flag`` otherwise."""
    spelled = text.strip().upper().removesuffix("IB").removesuffix("B")
    number, unit = (spelled[:-1], spelled[-1]) if spelled[-1:].isalpha() else (spelled, "")
    if unit not in _UNITS or not number.isdigit():
        raise ValueError(f"{flag} must be a whole number of bytes (or 512M, 2G), not {text!r}")
    return int(number) * _UNITS[unit]


def _sandbox(args: argparse.Namespace) -> Sandbox | None:
    """The Sandbox the ``--sandbox`` flags ask for; None without ``--sandbox``. ``ValueError``
    (one line naming the flag) for a value Sandbox refuses, or a flag that needs it."""
    given = [
        flag
        for flag, value in (
            ("--allow-net", args.allow_net),
            ("--allow-read", args.allow_read),
            ("--allow-write", args.allow_write),
            ("--max-pids", args.max_pids),
            ("--max-memory", args.max_memory),
        )
        if value
    ]
    if not args.sandbox:
        if given:
            raise ValueError(f"{given[0]} is a setting of the sandbox: add --sandbox")
        return None
    caps: dict[str, int] = {}
    if args.max_pids is not None:
        if not args.max_pids.strip().isdigit():
            raise ValueError(f"--max-pids must be a whole number, not {args.max_pids!r}")
        caps["pids"] = int(args.max_pids)
    if args.max_memory is not None:
        caps["memory"] = byte_count("--max-memory", args.max_memory)
    try:
        return Sandbox(
            network=tuple(args.allow_net),
            read=tuple(str(path.absolute()) for path in args.allow_read),
            write=tuple(str(path.absolute()) for path in args.allow_write),
            **caps,
        )
    except ValueError as error:
        refused = str(error)
        for name, flag in (("pids", "--max-pids"), ("memory", "--max-memory")):
            refused = refused.replace(f"Sandbox {name}", flag)
        raise ValueError(refused.replace("network endpoint", "--allow-net")) from None


def _budget(args: argparse.Namespace) -> Budget | None:
    """The Budget the ``--budget-*`` flags ask for; None without any. ``ValueError`` (one line
    naming the flag) for a value that is not a positive finite number, whole where it must be."""
    given = {
        "usd": (args.budget_usd, float),
        "tokens": (args.budget_tokens, int),
        "turns": (args.budget_turns, int),
    }
    if all(text is None for text, _ in given.values()):
        return None
    limits: dict[str, float | int] = {}
    for name, (text, kind) in given.items():
        if text is None:
            continue
        try:
            limits[name] = kind(text.strip())
            Budget(**{name: limits[name]})  # type: ignore[arg-type]
        except ValueError as error:
            what = "a number" if kind is float else "a whole number"
            refused = str(error).replace(f"Budget {name}", f"--budget-{name}")
            raise ValueError(
                refused if name in limits else f"--budget-{name} must be {what}, not {text!r}"
            ) from None
    return Budget(**limits)  # type: ignore[arg-type]


def _usage_error(message: str) -> int:
    print(f"thirdshift: {message}", file=sys.stderr)
    return Exit.USAGE_ERROR


def run(args: argparse.Namespace) -> int:
    if len(args.prompt) > 1:
        quoted = shlex.quote(" ".join(args.prompt))
        return _usage_error(
            f"the prompt is one argument, not {len(args.prompt)}: quote it "
            f"(thirdshift run {quoted}) or give it on stdin with - (thirdshift run - < prompt.md)"
        )
    args.prompt = args.prompt[0]
    worktree: Path = args.worktree
    if not worktree.is_dir():
        return _usage_error(f"worktree {worktree} is not a folder")
    if args.skills is not None and not args.skills.is_dir():
        return _usage_error(f"skills folder {args.skills} is not a folder")
    try:
        check_plain_name("session kind", args.kind)
        logs = Logs(args.logs.expanduser(), args.name or _default_name(worktree))
        harness = harness_named(args.harness)
        resolved(args.containment)  # one this machine does not allow: said before anything
        budget = _budget(args)
        # The flags' types already refused what is no duration: made here, it is one value.
        watchdogs = Watchdogs(
            idle=args.idle_timeout,
            after_result=args.after_result_timeout,
            wall=args.timeout,
            stop_grace=args.stop_grace,
        )
        sandbox = _sandbox(args)
        max_log_bytes = byte_count("--max-log-bytes", args.max_log_bytes) or None
        notify = None if args.notify_command is None else notify_command(args.notify_command)
    except (ValueError, ThirdshiftError) as error:
        return _usage_error(str(error))
    if args.prompt == "-" and sys.stdin.isatty():
        # Otherwise a bare `thirdshift run` at a terminal just sits there, waiting for stdin.
        print("thirdshift: type the prompt, then Ctrl-D on a line of its own", file=sys.stderr)
    prompt = _stdin_text() if args.prompt == "-" else args.prompt
    if not prompt.strip():
        return _usage_error("the prompt is empty: give it as an argument or on stdin")
    if args.prompt != "-" and len(prompt.strip().splitlines()) > 1:
        print(
            "thirdshift: warning: a prompt given as an argument shows in ps to every user of "
            "this machine; give a long one on stdin instead (thirdshift run - < prompt.md)",
            file=sys.stderr,
        )
    choice = made_choice(
        harness,
        args.model,
        args.effort,
        tuple(args.cli_args),
        env=NO_ENV,
        env_policy=args.env_policy,
        containment=args.containment,
        sandbox=sandbox,
    )

    # After reading the prompt: from here on, Ctrl-C stops the session cleanly, and Ctrl-C
    # again kills it at once.
    signals = _Signals()
    signals.install()
    sessions: Sessions | None = None
    try:
        with (
            interrupts.stopping(signals.stopping, kill=_say(KILLING)),
            Sessions.within(
                logs,
                worktree,
                choice,
                skills=args.skills,
                watchdogs=watchdogs,
                wait_for_limits=args.wait_for_limits,
                still_running_every=args.still_running_every,
                strict=args.strict,
                budget=budget,
                max_log_bytes=max_log_bytes,
                notify=notify,
            ) as sessions,
        ):
            final_message = sessions.run_to_final_message(args.kind, prompt)
    except KeyboardInterrupt as interrupt:
        return _interrupted(args, sessions, signals.first, interrupt)
    except ThirdshiftError as error:
        print(f"thirdshift: {failure_line(error)}", file=sys.stderr)
        if sessions is not None and sessions.last_log is not None:
            print(f"thirdshift: session log: {sessions.last_log}", file=sys.stderr)
        if args.json:
            _print_json(sessions, None, error)
        return exit_code(error)
    if interrupts.requested():
        return _interrupted(args, sessions, signals.first)
    if args.json:
        _print_json(sessions, final_message, None)
    elif final_message:
        _write_final_message(final_message)
    return 0


def failure_line(error: ThirdshiftError) -> str:
    """What ``run`` says of the error it ends on: a failure's class and whether it is
    ``retryable``, for a person deciding what to do (a refusal of the call as it is)."""
    message = shown(str(error), "message")
    if isinstance(error, ConfigurationError):
        return message
    retryable = isinstance(error, SessionFailed) and error.retryable
    return f"{type(error).__name__}, {'' if retryable else 'not '}retryable: {message}"


def exit_code(error: ThirdshiftError) -> Exit:
    """The code ``run`` ends with on ``error``, for a wrapper to branch on."""
    if isinstance(error, ConfigurationError):
        return Exit.USAGE_ERROR  # wherever it was found: fix the call, a retry will not help
    if isinstance(error, AuthFailed):
        return Exit.AUTH_FAILED
    if isinstance(error, SessionFailed) and error.retryable:
        return Exit.TEMPORARY_FAILURE
    return Exit.FAILED


STOPPING = "thirdshift: stopping the session (Ctrl-C again to kill it now)"
KILLING = "thirdshift: killing the session now"


class _Signals:
    """The run's handlers of SIGINT, SIGTERM and SIGHUP: each is an interrupt, as
    ``interrupts.install()`` makes it, and the first one's signal is kept, for the exit code
    and the stopping line (which offers "Ctrl-C again" only where a person can press it)."""

    def __init__(self) -> None:
        self.first: int | None = None
        try:
            self._terminal = os.isatty(sys.stderr.fileno())
        except (AttributeError, OSError, ValueError):
            self._terminal = False

    def install(self) -> None:
        interrupts.install()  # the checks, and whatever else it sets up
        for signum in interrupts.SIGNALS:
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.first is None:
            self.first = signum
        interrupts.request()

    def stopping(self) -> None:
        """Say that the session is being stopped, as a signal handler may (see ``_say``)."""
        if self._terminal:
            _say(STOPPING)()
            return
        name = signal.Signals(self.first).name if self.first else "an interrupt"
        _say(f"thirdshift: stopping the session on {name} (a second signal kills it now)")()


def _say(line: str) -> Callable[[], None]:
    """Write ``line`` to stderr as a signal handler may: one write, no buffer or lock that the
    interrupted code could be holding."""
    data = f"{line}\n".encode()

    def say() -> None:
        with contextlib.suppress(OSError):
            os.write(sys.stderr.fileno(), data)

    return say


def _interrupted(
    args: argparse.Namespace,
    sessions: Sessions | None,
    signum: int | None,
    interrupt: BaseException | None = None,
) -> int:
    print("thirdshift: interrupted", file=sys.stderr)
    if args.json:  # still one object, so that a script reading stdout gets the records so far
        # The session's own Interrupted names the id to continue it by.
        error = interrupt if isinstance(interrupt, Interrupted) else Interrupted()
        _print_json(sessions, None, error)
    return for_signal(signum)


def _write_final_message(message: str) -> None:
    """The product's output: raw into a pipe or file, escaped for a terminal.

    Either way in stdout's encoding, with what it cannot hold (a lone surrogate from the
    stream's JSON, say) escaped rather than raised.
    """
    text = shown(message, "output") if sys.stdout.isatty() else message
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    sys.stdout.write(f"{text}\n".encode(encoding, "backslashreplace").decode(encoding))
    sys.stdout.flush()


def _print_json(
    sessions: Sessions | None, final_message: str | None, failure: BaseException | None
) -> None:
    """The run as one JSON object (ASCII only): the final message, the failure, the endings
    with killed work, every record."""
    records = sessions.records if sessions is not None else ()
    print(
        dumps(
            {
                "final_message": final_message,
                "failure": failure_json(failure),
                "endings": _endings(records),
                "records": [record_json(record) for record in records],
            }
        )
    )


def _endings(records: Sequence[SessionRecord]) -> list[dict[str, Any]]:
    """Each session whose background work was killed as it ended, resumed away or not.

    ``kind`` is the run's (``--kind``), ``resume`` whether that session was its Resume. A run
    is one session and what followed it, so the first record's kind is the run's, and every
    later one is that kind with a suffix: ``-resume`` for the Resume (then, after a limit,
    ``-continued`` or ``-retry``), ``-continued`` or ``-retry`` for the first session's own.
    """
    if not records:
        return []
    kind = records[0].kind
    return [
        {
            "kind": kind,
            "killed": list(record.killed),
            "resume": record.kind.startswith(f"{kind}-resume"),
            "log": absolute(record.log),
        }
        for record in records
        if record.killed
    ]
