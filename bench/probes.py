"""The measurements themselves, each run by ``bench/run.py`` in a child process of its own.

``python bench/probes.py NAME JSON-ARGUMENTS`` runs one probe and prints its figures as one JSON
object on the last line of stdout. A child per probe keeps the measurements from contaminating
each other: peak RSS is this process's own, signal handlers are installed here and not in the
runner, and nothing one probe allocated is still around for the next.
"""

from __future__ import annotations

import codecs
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from window import cpu_seconds  # bench/: first on sys.path when run as a script

ROOT = Path(__file__).resolve().parent.parent
TRANSCRIPTS = ROOT / "tests" / "transcripts"
CHUNK = 64 * 1024  # what one read of a pipe gives at most, with Linux's default pipe size


def transcript_lines(dialect: str) -> list[bytes]:
    """Every line of the ``<dialect>-*`` transcripts, in a fixed order."""
    lines: list[bytes] = []
    for path in sorted(TRANSCRIPTS.glob(f"{dialect}-*/stdout.jsonl")):
        lines += [line + b"\n" for line in path.read_bytes().split(b"\n") if line.strip()]
    if not lines:
        raise SystemExit(f"no transcripts for {dialect} under {TRANSCRIPTS}")
    return lines


def stream(dialect: str, size: int) -> bytes:
    """At least ``size`` bytes of whole lines, the transcripts' lines repeated in order."""
    block = b"".join(transcript_lines(dialect))
    return block * -(-size // len(block))


# Reader throughput
#
# Each parser is a factory of one pass over a stream: it returns a function that takes the
# stream's next slice of bytes (``b""`` at the end). The stream is handed over in slices, each
# slice to every parser in turn, so that the machine's drift (large on a shared VM) hits every
# parser alike.

Pass = Callable[[bytes], None]


def _thirdshift(dialect: str) -> Callable[[], Pass]:
    """The follower's path: split into lines, decode each, feed it to the Harness's reader."""
    from thirdshift._machine.follow import LineSplitter
    from thirdshift.harness._builtin.claude import ClaudeReader
    from thirdshift.harness._builtin.codex import CodexReader

    def start() -> Pass:
        reader = ClaudeReader() if dialect == "claude" else CodexReader()
        lines = LineSplitter(reader.feed)

        def feed(data: bytes) -> None:
            if not data:
                lines.finish()
            for begin in range(0, len(data), CHUNK):
                lines.feed(data[begin : begin + CHUNK])

        return feed

    return start


def _bare() -> Pass:
    """The floor: one ``json.loads`` per line, nothing else (slices hold whole lines)."""
    loads = json.loads

    def feed(data: bytes) -> None:
        for line in data.split(b"\n"):
            if line:
                loads(line)

    return feed


def _sdk() -> tuple[Callable[[], Pass] | None, str]:
    """claude-agent-sdk's own path: its line framing and ``parse_message``, if it imports."""
    try:
        from claude_agent_sdk import __version__
        from claude_agent_sdk._internal.message_parser import parse_message
    except ImportError as error:
        return None, f"claude-agent-sdk not importable ({error})"
    try:
        from claude_agent_sdk._internal.transport.subprocess_cli import (
            _LineFramer,
            _parse_stdout_line,
        )
    except ImportError:
        _LineFramer = None  # an older SDK: frame lines the plain way

    def start() -> Pass:
        # What its transport does with each chunk of stdout: decode incrementally (anyio's
        # TextReceiveStream), frame lines, parse each into a dict, then into a Message.
        decoder = codecs.getincrementaldecoder("utf-8")()
        if _LineFramer is None:

            def plain(data: bytes) -> None:
                for line in decoder.decode(data, final=not data).split("\n"):
                    if line.strip():
                        parse_message(json.loads(line))

            return plain
        framer = _LineFramer()

        def feed(data: bytes) -> None:
            for begin in range(0, len(data), CHUNK):
                for line in framer.push(decoder.decode(data[begin : begin + CHUNK])):
                    event = _parse_stdout_line(line)
                    if event is not None:
                        parse_message(event)

        return feed

    how = "its line framing, then parse_message" if _LineFramer else "parse_message"
    return start, f"claude-agent-sdk {__version__} ({how})"


def probe_reader(dialect: str, size: int, runs: int, slices: int = 20) -> dict[str, Any]:
    data = stream(dialect, size)
    block = len(b"".join(transcript_lines(dialect)))
    per_slice = -(-len(data) // block // slices) * block  # whole blocks: slices end lines
    parts = [data[begin : begin + per_slice] for begin in range(0, len(data), per_slice)]
    parsers: dict[str, Callable[[], Pass]] = {
        "thirdshift": _thirdshift(dialect),
        "json.loads": _bare,
    }
    note = ""
    if dialect == "claude":
        sdk, note = _sdk()
        if sdk is not None:
            parsers["claude-agent-sdk"] = sdk
    figures: dict[str, list[float]] = {name: [] for name in parsers}
    for _ in range(runs):
        passes = {name: start() for name, start in parsers.items()}
        seconds = dict.fromkeys(parsers, 0.0)
        for part in [*parts, b""]:
            for name, feed in passes.items():
                started = time.perf_counter()
                feed(part)
                seconds[name] += time.perf_counter() - started
        for name in parsers:
            figures[name].append(len(data) / 1e6 / seconds[name])
    return {"bytes": len(data), "mb_per_s": figures, "sdk": note}


# Follow throughput


@dataclass(frozen=True)
class _Count:
    """A progress sink that keeps nothing but a count (a list would grow with the stream)."""

    seen: list[int]

    def __call__(self, line: str) -> None:
        self.seen[0] += 1


def _no_parse() -> Any:
    """A reader that reads nothing: what the adapter costs without any parsing. It subclasses
    ``StreamReader``, so that a member the contract gains later has its default here too."""
    from thirdshift.harness import StreamReader

    class NoParse(_NoParse, StreamReader):
        pass

    return NoParse()


class _NoParse:
    """The members of a reader that reads nothing that ``StreamReader`` leaves undefined."""

    session_id = None
    killed = ()
    final_message = None
    summary = None
    failed = False
    error = None

    def feed(self, line: str) -> list[str]:
        return []

    def ended(self) -> Any:
        from thirdshift._outside import Ended

        return Ended(session_id=None, killed=(), final_message=None)


def probe_follow(worktree: str, log: str, parse: bool) -> dict[str, Any]:
    from thirdshift import claude
    from thirdshift._machine import MachineOutside
    from thirdshift.harness._base import Choice
    from thirdshift.harness._builtin.claude import ClaudeHarness

    @dataclass(frozen=True)
    class NoParseClaude(ClaudeHarness):
        def reader(self, worktree: Path) -> Any:
            return _no_parse()

    choice = claude() if parse else Choice(NoParseClaude())
    seen = [0]
    outside = MachineOutside(Path(worktree), choice, progress=_Count(seen))
    cpu_before = cpu_seconds()
    started = time.perf_counter()
    outside.run_session("bench", None, "write", Path(log))
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds() - cpu_before,
        "bytes": os.stat(log).st_size,
        "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "progress_lines": seen[0],
    }


# Interrupt latency


def probe_interrupt(mode: str, runs: int, grace: float) -> dict[str, Any]:
    from thirdshift import Interrupted, Watchdogs, claude, interrupts
    from thirdshift._machine import MachineOutside
    from thirdshift.testing import steps
    from thirdshift.testing.fakecli import FakeCLIs

    root = Path(tempfile.mkdtemp(prefix="thirdshift-bench-interrupt-"))
    try:
        fakes = FakeCLIs(root / "fakecli")
        fakes.copy_output(False)
        os.environ.update(fakes.env())
        worktree = root / "worktree"
        worktree.mkdir()
        interrupts.install()
        outside = MachineOutside(
            worktree, claude(), progress=_Count([0]), watchdogs=Watchdogs(stop_grace=grace)
        )
        ignore = [signal.SIGTERM] if mode == "ignores-sigterm" else []
        main = threading.main_thread().ident
        assert main is not None
        latencies: list[float] = []
        left = 0
        for index in range(runs + 1):  # the first is a warm-up, not counted
            fakes.claude.script(steps.hang(ignore))
            fired: list[float] = []

            def fire(index: int = index, fired: list[float] = fired) -> None:
                fakes.claude.wait_for_call(index, hanging=True, timeout=30)
                fired.append(time.monotonic())
                signal.pthread_kill(main, signal.SIGINT)  # as Ctrl-C reaches the main thread

            helper = threading.Thread(target=fire)
            helper.start()
            try:
                outside.run_session("bench", None, "hang", root / f"log-{index}.jsonl")
            except Interrupted:
                # run_session returns only once the supervisor has exited, and the supervisor
                # exits only when nothing it owns is left: this instant bounds "all gone".
                done = time.monotonic()
            else:
                raise SystemExit("the session ended without being interrupted")
            helper.join()
            interrupts.clear()
            call = fakes.claude.calls[index]
            if call.running or any(started.running for started in call.started):
                left += 1
            if index:
                latencies.append((done - fired[0]) * 1000)
        return {"ms": latencies, "left": left}
    finally:
        shutil.rmtree(root, ignore_errors=True)


# Per-session overhead


def probe_overhead(runs: int, fresh_fake: bool = False) -> dict[str, Any]:
    """Sessions through ``within`` and the same fake run by ``subprocess.run``, alternately.

    ``fresh_fake`` runs the fake from a copy of its package that holds no cached bytecode, as
    a fresh checkout does: with PYTHONDONTWRITEBYTECODE=1, every call of it then compiles it.
    """
    import thirdshift
    from thirdshift import Logs, Sessions, Watchdogs, claude
    from thirdshift.testing import fakecli as fake
    from thirdshift.testing import steps
    from thirdshift.testing.fakecli import FakeCLIs

    root = Path(tempfile.mkdtemp(prefix="thirdshift-bench-overhead-"))
    try:
        fakes = FakeCLIs(root / "fakecli")
        fakes.copy_output(False)
        if fresh_fake:
            # The whole thirdshift package, laid out as it is: the fake imports its modules by
            # their dotted names (thirdshift.testing.steps, the Harnesses' argv), each found
            # relative to its own file, so a copy of the fakecli folder alone lacks them.
            package = Path(thirdshift.__file__).parent
            copy = root / "fresh" / "thirdshift"
            shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
            program = Path(fake.__file__).parent / "__main__.py"
            copied = copy / program.relative_to(package)
            for shim in fakes.bin_dir.iterdir():
                text = shim.read_text(encoding="utf-8")
                assert str(program) in text, f"{shim} does not run {program}"
                shim.write_text(text.replace(str(program), str(copied)), "utf-8")
        os.environ.update(fakes.env())
        worktree = root / "worktree"
        worktree.mkdir()
        choice = claude()
        argv = list(choice.harness.invocation(choice, None, "hi").argv)
        argv[0] = str(fakes.bin_dir / "claude")
        logs = Logs(root / "logs", "bench")
        sink = _Count([0])

        def through_within(watchdogs: Watchdogs | None = None) -> float:
            fakes.claude.script(steps.say("done"))
            started = time.perf_counter()
            with Sessions.within(
                logs, worktree, choice, progress=sink, watchdogs=watchdogs
            ) as sessions:
                sessions.run("bench", "hi")
            return time.perf_counter() - started

        def without_watchdogs() -> float:
            return through_within(Watchdogs(idle=None, after_result=None, wall=None))

        def every_watchdog() -> float:
            return through_within(Watchdogs(wall=3600.0))

        def direct() -> float:
            fakes.claude.script(steps.say("done"))
            with open(root / "direct.jsonl", "wb") as out, open(root / "direct.err", "wb") as err:
                started = time.perf_counter()
                subprocess.run(argv, input=b"hi", stdout=out, stderr=err, cwd=worktree, check=True)
                return time.perf_counter() - started

        within_ms: list[float] = []
        direct_ms: list[float] = []
        unwatched_ms: list[float] = []
        all_watched_ms: list[float] = []
        for index in range(runs + 1):  # the first round is a warm-up, not counted
            order = [
                (through_within, within_ms),
                (direct, direct_ms),
                (without_watchdogs, unwatched_ms),
                (every_watchdog, all_watched_ms),
            ]
            for measure, into in order if index % 2 else reversed(order):
                seconds = measure()
                if index:
                    into.append(seconds * 1000)
        return {
            "within_ms": within_ms,
            "direct_ms": direct_ms,
            "unwatched_ms": unwatched_ms,
            "all_watched_ms": all_watched_ms,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


# Inspect


def probe_inspect(log: str, json_output: bool) -> dict[str, Any]:
    """``thirdshift inspect LOG [--json]`` in this process, its output thrown away."""
    from thirdshift._cli import main

    args = ["inspect", log, *(["--json"] if json_output else [])]
    with open(os.devnull, "w") as devnull:
        stdout, sys.stdout = sys.stdout, devnull
        try:
            cpu_before = cpu_seconds()
            started = time.perf_counter()
            code = main(args)
            seconds = time.perf_counter() - started
            cpu_used = cpu_seconds() - cpu_before
        finally:
            sys.stdout = stdout
    if code != 0:
        raise SystemExit(f"thirdshift inspect exited {code}")
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_used,
        "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }


PROBES: dict[str, Callable[..., dict[str, Any]]] = {
    "reader": probe_reader,
    "follow": probe_follow,
    "inspect": probe_inspect,
    "interrupt": probe_interrupt,
    "overhead": probe_overhead,
}


if __name__ == "__main__":
    name, arguments = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps(PROBES[name](**arguments)))
