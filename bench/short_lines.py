"""What short lines of any shape cost the orchestrator, live and read back (issue 26, L1).

``python bench/short_lines.py [--runs N] [--mib M] [--object-mib M] [--src PATH]`` has a
stand-in ``claude`` (``bench/writer.py``) write M MiB of each shape through
``MachineOutside.run_session``, then ``thirdshift inspect --json`` read a log of the same lines
(after a Claude ``init``), each in a child process of its own (``bench/probes.py``), and
prints the orchestrator's CPU for each: the median of N runs, interleaved, with min and max.
Lines that may hold a JSON object are read by the reader, whose work grows with their count:
those shapes are written --object-mib MiB at a time. ``--src`` runs the probes on another
checkout's ``src`` (``/work/main/src``, say), to measure before and after on one machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

# bench/run.py: this folder is first on sys.path when run as a script
from run import ROOT, measured_env, probe, writer_on_path

# What no JSON object is: each costs a scan of the stream, whatever its number of lines.
JUNK = {
    "`x` lines": b"x\n",
    "newlines": b"\n",
    "`x` lines, each after 15 empty ones": b"\n" * 15 + b"x\n",
    "lines of one space": b" \n",
    "lines of `{` and of `}`": b"{\n}\n",
    "lines of `{x` and of `x}`": b"{x\n x}\n",
    "text lines of 20 bytes": b"make: nothing to do\n",
}
# What may be one: each line reaches the reader, which parses it.
OBJECTS = {
    "`{}` lines": b"{}\n",
    '`{""}` lines (not JSON)': b'{""}\n',
    '`{"type":"result","subtype":"success"}` lines': b'{"type":"result","subtype":"success"}\n',
}
INIT = b'{"type":"system","subtype":"init","session_id":"s"}\n'


def measure(
    name: str, line: bytes, mib: int, work: Path, env: dict[str, str]
) -> tuple[float, float]:
    """One run of ``mib`` MiB of ``line``: the orchestrator's CPU live, then in inspect."""
    block = work / "block.jsonl"
    block.write_bytes(line * ((1 << 20) // len(line)))
    size = block.stat().st_size * mib
    worktree = work / "worktree"
    worktree.mkdir(exist_ok=True)
    log = work / "session.jsonl"
    writer = writer_on_path(work / "bin", block, mib)
    try:
        live = probe(
            "follow",
            env | {"PATH": writer["PATH"]},
            worktree=str(worktree),
            log=str(log),
            parse=True,
        )
        if live["bytes"] != size:
            raise RuntimeError(f"{name}: the log holds {live['bytes']} bytes, not {size}")
        with log.open("r+b") as file:  # a Claude init first, so that inspect knows the dialect
            file.seek(0)
            rest = file.read()
            file.seek(0)
            file.write(INIT + rest)
        read_back = probe("inspect", env, log=str(log), json_output=True)
    finally:
        log.unlink(missing_ok=True)
        log.with_name(log.stem + ".stderr").unlink(missing_ok=True)
        log.with_name(log.stem + ".record.json").unlink(missing_ok=True)
    return live["cpu_seconds"], read_back["cpu_seconds"]


def row(label: str, values: Sequence[float]) -> str:
    return f"| {label} | {statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f} |"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mib", type=int, default=64, help="MiB of each shape of junk")
    parser.add_argument("--object-mib", type=int, default=8, help="MiB of each object shape")
    parser.add_argument("--src", type=Path, help="measure this checkout's src instead")
    args = parser.parse_args(argv)
    env = measured_env()
    if args.src is not None:
        env["PYTHONPATH"] = str(args.src.resolve())
    shapes = [(name, line, args.mib) for name, line in JUNK.items()]
    shapes += [(name, line, args.object_mib) for name, line in OBJECTS.items()]
    figures: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name, *_ in shapes}
    with tempfile.TemporaryDirectory(prefix="thirdshift-short-") as work:
        for run in range(args.runs):  # interleaved, so that drift of the machine hits all alike
            for name, line, mib in shapes:
                live, read_back = measure(name, line, mib, Path(work), env)
                figures[name][0].append(live)
                figures[name][1].append(read_back)
                print(
                    f"run {run + 1}: {name}: {live:.2f} s live, {read_back:.2f} s inspect",
                    file=sys.stderr,
                )
    print(f"code: {args.src or ROOT / 'src'}; median of {args.runs} runs, min, max (CPU s)\n")
    print("| shape | median | min | max |\n|---|--:|--:|--:|")
    for name, _, mib in shapes:
        live, read_back = figures[name]
        print(row(f"run, {mib} MiB of {name}", live))
        print(row(f"inspect, {mib} MiB of {name}", read_back))
    return 0


if __name__ == "__main__":
    sys.exit(main())
