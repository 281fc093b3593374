"""Containment figures: a session's start and the stop of 1, 100 and 2,000 processes, per
containment, all in one run (``make bench`` runs it after bench/run.py).

Each figure comes from :class:`~thirdshift._machine.supervised.Supervised` driving a real
supervisor, so it is the supervisor's own cost, without a reader or a log:

- **start**: from creating the handle to the supervisor's ``gone`` for a CLI that exits at once
  (``/bin/true``): the supervisor's start, the containment's set-up (a cgroup made and removed;
  the namespaces entered) and the stop of nothing;
- **stop of N**: a CLI that starts N ``sleep 300`` in sessions of their own, ignoring SIGTERM,
  then waits; from ``stop`` to ``gone`` with a grace of 0.2 s (so each stop has a SIGKILL
  round), the processes' start not counted.

Ratios are against ``scan`` in the same run. The rows of each containment alternate run by run,
so that the load of the machine falls on all alike.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from results_block import write_block  # bench/: first on sys.path when run as a script

from thirdshift._machine.allowed import allowed
from thirdshift._machine.supervised import Supervised

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
TRUE = "/bin/true" if os.path.exists("/bin/true") else "/usr/bin/true"
SPAWNER = (
    "import os, signal, sys, time\n"
    "sleep = '/bin/sleep' if os.path.exists('/bin/sleep') else '/usr/bin/sleep'\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "for _ in range(int(sys.argv[1])):\n"
    "    os.posix_spawn(sleep, [sleep, '300'], os.environ, setsid=True)\n"
    "print('ready', flush=True)\n"
    "time.sleep(300)\n"
)


def _read_until(handle: Supervised, done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 120
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError("the supervisor did not answer in 120 s")
        if select.select([handle.status_fd], [], [], 1.0)[0]:
            handle.read_status()


def start_ms(containment: str, folder: Path) -> float:
    began = time.perf_counter()
    handle = Supervised(
        [TRUE],
        cwd=folder,
        env=dict(os.environ),
        stop_signals=(signal.SIGTERM,),
        grace=0.2,
        containment=containment,  # type: ignore[arg-type]
    )
    try:
        _read_until(handle, lambda: handle.cli_exit is not None)
        handle.end(0)
        _read_until(handle, lambda: not handle.status_open)
    finally:
        handle.close()
    if not handle.gone:
        raise RuntimeError(f"{containment}: not gone")
    return (time.perf_counter() - began) * 1000


def stop_ms(containment: str, folder: Path, count: int) -> float:
    handle = Supervised(
        [sys.executable, "-c", SPAWNER, str(count)],
        cwd=folder,
        env=dict(os.environ),
        stop_signals=(signal.SIGTERM,),
        grace=0.2,
        containment=containment,  # type: ignore[arg-type]
    )
    try:
        said = b""
        while b"ready" not in said:
            said += os.read(handle.stdout_fd, 64) or b"ready"
        began = time.perf_counter()
        handle.stop()
        _read_until(handle, lambda: not handle.status_open)
        took = (time.perf_counter() - began) * 1000
    finally:
        handle.close()
    if not handle.gone:
        raise RuntimeError(f"{containment}: not gone after the stop of {count}")
    return took


def measure(runs: int, counts: list[int]) -> dict[str, dict[str, list[float]]]:
    figures: dict[str, dict[str, list[float]]] = {name: {} for name in allowed()}
    with tempfile.TemporaryDirectory(prefix="thirdshift-bench-containment-") as folder:
        for _ in range(runs):
            for name, found in figures.items():
                found.setdefault("start", []).append(start_ms(name, Path(folder)))
                for count in counts:
                    found.setdefault(f"stop {count}", []).append(stop_ms(name, Path(folder), count))
    return figures


def table(figures: dict[str, dict[str, list[float]]], runs: int) -> str:
    lines = [
        f"### Containment: start and stop per containment ({runs} runs, medians)",
        "",
        "| measurement | "
        + " | ".join(figures)
        + " | "
        + " | ".join(f"{name} / scan" for name in figures if name != "scan")
        + " |",
        "|---" * (1 + 2 * len(figures) - 1) + "|",
    ]
    keys = list(next(iter(figures.values())))
    for key in keys:
        medians = {name: statistics.median(values[key]) for name, values in figures.items()}
        ratios = [
            f"{_ratio(values[key], figures['scan'][key]):.2f}x"
            for name, values in figures.items()
            if name != "scan"
        ]
        label = "start: /bin/true to gone" if key == "start" else f"{key} processes: stop to gone"
        cells = [f"{medians[name]:.1f} ms" for name in figures]
        lines.append(f"| {label} | " + " | ".join(cells + ratios) + " |")
    lines += [
        "",
        "Measured by `bench/containment.py` through `Supervised` (the supervisor alone: no "
        "reader, no log); stop rows from `stop` to `gone`, grace 0.2 s, the N processes "
        "ignoring SIGTERM in sessions of their own. Ratios are run by run against `scan`.",
    ]
    return "\n".join(lines)


def _ratio(values: list[float], against: list[float]) -> float:
    return statistics.median(a / b for a, b in zip(values, against, strict=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--counts", type=int, nargs="+", default=[1, 100, 2000], help="the stops' sizes"
    )
    args = parser.parse_args()
    figures = measure(args.runs, args.counts)
    text = table(figures, args.runs)
    print(text)
    if not args.no_write:
        write_block(RESULTS, "containment", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
