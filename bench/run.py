"""thirdshift's benchmarks: every figure side by side in one run, as a table of ratios.

Run by ``make bench`` (``python bench/run.py --help`` for the knobs). Each measurement runs in
a child process of its own (``bench/probes.py``); every figure is the median of several runs,
with their min and max, and each ratio is taken run by run (run i of one against run i of the
other) before its median is. The table is printed, and written with a description of the
machine between the markers of ``bench/RESULTS.md`` (the notes around them are kept).

The measured processes run with the environment a user's machine has by default: without
``PYTHONDONTWRITEBYTECODE`` (and ``PYTHONUNBUFFERED``), so that Python caches bytecode as usual.
One row measures the session overhead with bytecode caching off, for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import probes  # bench/probes.py: this folder is first on sys.path when run as a script
from results_block import write_block

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PROBES = BENCH / "probes.py"
WRITER = BENCH / "writer.py"
RESULTS = BENCH / "RESULTS.md"
MB = 1_000_000

RULE_TEST = "tests/test_sessions.py::test_killed_work_with_a_session_id_is_resumed_exactly_once"
E2E_TWIN = (
    "e2e/test_sessions_e2e.py::test_a_session_that_leaves_its_tests_running_is_resumed_once[claude]"
)


def measured_env(**changes: str) -> dict[str, str]:
    """The environment of measured processes: a user's defaults, plus ``changes``."""
    env = dict(os.environ)
    for name in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED"):  # set on this machine, not usual
        env.pop(name, None)
    env.update(changes)
    return env


def probe(name: str, env: dict[str, str] | None = None, **arguments: Any) -> dict[str, Any]:
    """Run one probe in a child process and return its figures."""
    done = subprocess.run(
        [sys.executable, str(PROBES), name, json.dumps(arguments)],
        check=False,
        env=env or measured_env(),
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise RuntimeError(f"probe {name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# The table


@dataclass
class Row:
    """One line of the table: a measurement (its runs) or a ratio (run by run)."""

    label: str
    values: list[float]
    unit: str
    goal: str = ""
    met: bool | None = None
    digits: int = 0

    def cells(self) -> list[str]:
        if not self.values:
            return [self.label, "skipped", "", "", self.unit, self.goal, ""]
        fmt = f"{{:.{self.digits}f}}"
        low, mid, high = min(self.values), statistics.median(self.values), max(self.values)
        verdict = {True: "met", False: "MISSED", None: ""}[self.met]
        return [
            self.label,
            *(fmt.format(v) for v in (mid, low, high)),
            self.unit,
            self.goal,
            verdict,
        ]


@dataclass
class Section:
    title: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        return row


HEADER = ["measurement", "median", "min", "max", "unit", "goal", ""]


def ratios(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    return [n / d for n, d in zip(numerators, denominators, strict=False) if d]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def markdown(sections: list[Section]) -> str:
    out = []
    for section in sections:
        out.append(f"\n### {section.title}\n")
        out.append("| " + " | ".join(HEADER) + " |")
        out.append("|" + "|".join(["---", "--:", "--:", "--:", "---", "---", "---"]) + "|")
        for row in section.rows:
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in row.cells()) + " |")
        for note in section.notes:
            out.append(f"\n{note}")
    return "\n".join(out) + "\n"


def goals(sections: list[Section]) -> str:
    """The goals table: every row with a goal, from the same sections as the table itself, so
    that the goals are never quoted from another run than the figures they stand on."""
    out = [
        "| goal | measurement | median | verdict |",
        "|---|---|--:|---|",
    ]
    for section in sections:
        for row in section.rows:
            if not row.goal:
                continue
            label, mid, *_, unit, goal, verdict = row.cells()
            figure = mid if mid == "skipped" else f"{mid} {unit}"
            cells = [f"{goal} {unit}", f"{section.title.split(' ', 1)[1]}: {label}", figure]
            cells.append(verdict or "not judged")
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out) + "\n"


def plain(sections: list[Section]) -> str:
    widths = [len(h) for h in HEADER]
    for section in sections:
        for row in section.rows:
            widths = [max(w, len(c)) for w, c in zip(widths, row.cells(), strict=True)]
    out = []
    for section in sections:
        out.append(f"\n{section.title}")
        for row in [HEADER] + [r.cells() for r in section.rows]:
            cells = [
                c.ljust(w) if i in (0, 4, 5, 6) else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            ]
            out.append("  " + "  ".join(cells).rstrip())
        for note in section.notes:
            out.append(f"  note: {note}")
    return "\n".join(out)


# The machine


def machine() -> list[str]:
    cpu = "unknown"
    memory = "unknown"
    try:
        info = dict(
            (key.strip(), value.strip())
            for key, _, value in (
                line.partition(":") for line in Path("/proc/cpuinfo").read_text().splitlines()
            )
        )
        cpu = info.get("model name", cpu)
        if "cpu MHz" in info:
            cpu += f" at {float(info['cpu MHz']):.0f} MHz"
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    except OSError:
        pass
    commit = _git("rev-parse", "--short", "HEAD")
    dirty = (
        " with uncommitted changes" if _git("status", "--porcelain", "--untracked-files=no") else ""
    )
    return [
        f"- CPU: {cpu}, {os.cpu_count()} cores",
        f"- Memory: {memory}",
        f"- Kernel: {platform.system()} {platform.release()}",
        f"- Python: {platform.python_implementation()} {platform.python_version()}",
        f"- thirdshift: {commit or 'unknown commit'}{dirty}",
        f"- Run: {time.strftime('%Y-%m-%d %H:%M %Z')}",
    ]


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], check=False, cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


# The sizes no option sets


@dataclass(frozen=True)
class Fixed:
    """The sizes of the sections that have no option of their own: the published ones, or
    (``SMOKE``) the smallest that still runs every path of the section, for ``--smoke``."""

    long_line: int = 64 * 1024 * 1024  # over the parse cap: logged, not parsed
    parsed_long_line: int = 3_500_000
    blank_mib: int = 64
    inspected_line: int = 256 * MB
    inspected_result: int = 32 << 20
    inspected_lists: int = 10
    tool_calls: tuple[int, int] = (100_000, 400_000)
    suite: tuple[str, ...] = ("tests",)

    def inspected(self) -> dict[str, list[tuple[str, str, int]]]:
        """The logs ``inspect`` reads: each a list of (event, filler, size), as ``_write_log``
        takes them."""
        few, many = self.tool_calls
        lists = self.inspected_lists
        return {
            f"one {self.inspected_line // MB} MB line": [
                (
                    '{"type":"assistant","message":{"content":[{"type":"text","text":"@@"}]}}',
                    "x",
                    self.inspected_line,
                )
            ],
            f"one {self.inspected_result >> 20} MiB result line": [
                ('{"type":"result","subtype":"success","result":"@@"}', "x", self.inspected_result)
            ],
            f"{lists} 4 MiB lines of {{}},{{}},...": [
                (
                    '{"type":"result","subtype":"success","result":"ok","x":[@@{}]}',
                    "{},",
                    (4 << 20) - 100,
                )
            ]
            * lists,
            f"{few:,} tool calls": [(TOOL_CALL, "", 0)] * few,
            f"{many:,} tool calls": [(TOOL_CALL, "", 0)] * many,
        }


SMOKE = Fixed(
    long_line=(4 << 20) + 1,
    parsed_long_line=100_000,
    blank_mib=1,
    inspected_line=5 * MB,
    inspected_result=5 << 20,
    inspected_lists=1,
    tool_calls=(100, 400),
    suite=("tests/test_sessions.py",),
)


# 1. Reader throughput


def bench_reader(runs: int, size: int) -> Section:
    section = Section(f"1. Reader throughput: {size // MB} MB of transcript lines, in memory")
    claude = probe("reader", dialect="claude", size=size, runs=runs)
    codex = probe("reader", dialect="codex", size=size, runs=runs)
    ours, bare = claude["mb_per_s"]["thirdshift"], claude["mb_per_s"]["json.loads"]
    sdk = claude["mb_per_s"].get("claude-agent-sdk", [])
    section.add(Row("Claude: thirdshift (lines, decode, ClaudeReader)", ours, "MB/s"))
    section.add(Row("Claude: bare json.loads per line", bare, "MB/s"))
    section.add(Row("Claude: claude-agent-sdk parser", sdk, "MB/s"))
    mine = ratios(ours, bare)
    section.add(Row("Claude: thirdshift / json.loads", mine, "x", ">= 0.5", median(mine) >= 0.5, 2))
    if sdk:
        theirs = ratios(ours, sdk)
        section.add(
            Row("Claude: thirdshift / claude-agent-sdk", theirs, "x", "> 1", median(theirs) > 1, 2)
        )
    else:
        section.add(Row("Claude: thirdshift / claude-agent-sdk", [], "x", "> 1"))
    ours, bare = codex["mb_per_s"]["thirdshift"], codex["mb_per_s"]["json.loads"]
    section.add(Row("Codex: thirdshift (lines, decode, CodexReader)", ours, "MB/s"))
    section.add(Row("Codex: bare json.loads per line", bare, "MB/s"))
    mine = ratios(ours, bare)
    section.add(Row("Codex: thirdshift / json.loads", mine, "x", ">= 0.5", median(mine) >= 0.5, 2))
    section.notes.append(
        f"The claude-agent-sdk row: {claude['sdk']}."
        if sdk
        else f"The claude-agent-sdk row is skipped: {claude['sdk']}."
    )
    return section


# 2. Follow throughput


def writer_on_path(bin_dir: Path, block: Path, count: int) -> dict[str, str]:
    """A folder with a ``claude`` that writes ``block`` ``count`` times (``bench/writer.py``);
    the environment with it first on PATH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "claude"
    shim.write_text(
        f'#!/bin/sh\nexec "{sys.executable}" -S "{WRITER}" "{block}" {count} "$@"\n',
        encoding="utf-8",
    )
    shim.chmod(0o755)
    return measured_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


class FollowBench:
    """The follow's runs, and its floors, over one block of Claude stream lines repeated."""

    def __init__(self, work: Path, big: int, small: int, long: int, fixed: Fixed) -> None:
        lines = probes.transcript_lines("claude")
        self.block = b"".join(lines * max(1, (1 << 20) // sum(map(len, lines))))
        self.block_path = work / "block.jsonl"
        self.block_path.write_bytes(self.block)
        # The hostile case: a line over the parse cap (logged, not parsed) and lines just
        # under it (each parsed whole); as the security review's 64 MiB line was.
        # Written a line at a time and not kept: a child forked while this process held it
        # would start with that much resident, and its peak RSS would count it.
        self.long_block_path = work / "long-block.jsonl"
        with self.long_block_path.open("wb") as block:
            for size in (fixed.long_line, *[fixed.parsed_long_line] * 10):
                _write_text_line(block, size)
        self.long_block_size = self.long_block_path.stat().st_size
        self.worktree = work / "worktree"
        self.worktree.mkdir(exist_ok=True)
        self.log = work / "session.jsonl"
        self.stream = work / "stream.jsonl"
        self.out = work / "out.jsonl"
        self.counts = {
            "big": max(1, big // len(self.block)),
            "small": max(1, small // len(self.block)),
            "long": max(1, long // self.long_block_size),
        }
        self.envs = {name: self._shim(work / f"bin-{name}", name) for name in self.counts}
        self.figures: dict[str, list[float]] = {}

    def _block(self, name: str) -> tuple[Path, int]:
        if name == "long":
            return self.long_block_path, self.long_block_size
        return self.block_path, len(self.block)

    def size(self, name: str) -> int:
        return self.counts[name] * self._block(name)[1]

    def _shim(self, bin_dir: Path, name: str) -> dict[str, str]:
        return writer_on_path(bin_dir, self._block(name)[0], self.counts[name])

    def add(self, name: str, value: float) -> None:
        self.figures.setdefault(name, []).append(value)

    def follow(self, name: str, parse: bool = True) -> None:
        """One session through the real adapter, in a child: its MB/s and peak RSS."""
        try:
            result = probe(
                "follow",
                self.envs[name],
                worktree=str(self.worktree),
                log=str(self.log),
                parse=parse,
            )
        finally:
            self.log.unlink(missing_ok=True)
            self.log.with_name(self.log.stem + ".stderr").unlink(missing_ok=True)
            self.log.with_name(self.log.stem + ".record.json").unlink(missing_ok=True)
        if result["bytes"] != self.size(name):
            raise RuntimeError(f"the log holds {result['bytes']} bytes, not {self.size(name)}")
        label = name if parse else f"{name}-noparse"
        self.add(label, result["bytes"] / MB / result["seconds"])
        self.add(f"{label}-rss", result["maxrss_kb"] / 1024)

    def floors(self) -> None:
        """``cat stream > file``, and the writer itself piped through ``cat`` into a file."""
        try:
            with open(self.out, "wb") as out:
                started = time.perf_counter()
                subprocess.run(["cat", str(self.stream)], stdout=out, check=True)
                self.add("cat", self.size("big") / MB / (time.perf_counter() - started))
            self.out.unlink()
            with open(self.out, "wb") as out:
                started = time.perf_counter()
                writer = subprocess.Popen(
                    [
                        sys.executable,
                        "-S",
                        str(WRITER),
                        str(self.block_path),
                        str(self.counts["big"]),
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    env=measured_env(),
                )
                assert writer.stdout is not None
                subprocess.run(["cat"], stdin=writer.stdout, stdout=out, check=True)
                writer.stdout.close()
                writer.wait()
                self.add("pipe", self.size("big") / MB / (time.perf_counter() - started))
        finally:
            self.out.unlink(missing_ok=True)

    def run(self, runs: int) -> None:
        with open(self.stream, "wb") as stream:
            for _ in range(self.counts["big"]):
                stream.write(self.block)
        try:
            for _ in range(runs):  # interleaved, so that drift of the machine hits every row alike
                self.follow("small")
                self.follow("big")
                self.follow("big", parse=False)
                self.follow("long")
                self.floors()
        finally:
            self.stream.unlink(missing_ok=True)


def _write_text_line(file: BinaryIO, size: int) -> None:
    """Write a Claude assistant event whose text is ``size`` bytes, a MiB at a time."""
    file.write(b'{"type":"assistant","message":{"content":[{"type":"text","text":"')
    for start in range(0, size, 1 << 20):
        file.write(b"x" * min(1 << 20, size - start))
    file.write(b'"}]}}\n')


def bench_follow(
    runs: int, work: Path, big: int, small: int, long: int, *, fixed: Fixed
) -> Section:
    bench = FollowBench(work, big, small, long, fixed)
    big_mb, small_mb = f"{bench.size('big') / MB:.0f} MB", f"{bench.size('small') / MB:.0f} MB"
    section = Section(
        f"2. Follow: a stand-in claude writing {big_mb} of Claude stream lines through "
        "MachineOutside.run_session"
    )
    bench.run(runs)
    figures = bench.figures
    ours = figures["big"]
    section.add(Row(f"thirdshift follow, {big_mb}", ours, "MB/s", ">= 100", median(ours) >= 100))
    section.add(Row(f"thirdshift follow, {small_mb}", figures["small"], "MB/s"))
    section.add(
        Row(f"same, reader stubbed out (no parsing), {big_mb}", figures["big-noparse"], "MB/s")
    )
    section.add(Row(f"floor: cat stream > file, {big_mb}", figures["cat"], "MB/s"))
    section.add(Row(f"floor: writer | cat > file, {big_mb}", figures["pipe"], "MB/s"))
    section.add(Row("thirdshift / cat stream > file", ratios(ours, figures["cat"]), "x", digits=2))
    section.add(
        Row("thirdshift / writer | cat > file", ratios(ours, figures["pipe"]), "x", digits=2)
    )
    for name, size in (("small", small_mb), ("big", big_mb)):
        values = figures[f"{name}-rss"]
        section.add(
            Row(f"peak RSS of the follow, {size}", values, "MB", "< 60", max(values) < 60, 1)
        )
    growth = ratios(figures["big-rss"], figures["small-rss"])
    flat = max(growth) < 1.1
    section.add(Row(f"peak RSS {big_mb} / {small_mb}", growth, "x", "flat (~1)", flat, 2))
    long_mb = f"{bench.size('long') / MB:.0f} MB"
    values = figures["long-rss"]
    section.add(
        Row(
            f"peak RSS of the follow, {long_mb} of long lines",
            values,
            "MB",
            "< 100",
            max(values) < 100,
            1,
        )
    )
    section.notes.append(
        "MB is 10^6 bytes. Each follow is timed from `run_session` to its return, in a child "
        "process whose `ru_maxrss` is the peak RSS; the log is checked to hold every byte. The "
        "stand-in `claude` (`bench/writer.py`) writes a 1 MB block of the Claude transcripts' "
        "lines over and over; `cat` reads the same bytes from a file in the page cache. The "
        f"long lines: one of {fixed.long_line >> 20} MiB (over the parse cap: logged, not "
        f"parsed) and ten of {fixed.parsed_long_line / MB:.1f} MB (parsed), over and over."
    )
    return section


# 2b. Blank lines


# Each block is 1 MiB of blank lines: newlines alone, or whitespace-only CRLF lines.
BLANK_BLOCKS = {"newlines": b"\n", "whitespace-only lines": b" \t \r\n"}


def bench_blank(runs: int, work: Path, fixed: Fixed) -> Section:
    """What a stream of nothing but blank lines costs the orchestrator (issue 15, item 8)."""
    blank_mib = fixed.blank_mib
    section = Section(
        f"2b. Blank lines: a stand-in claude writing {blank_mib} MiB of them through "
        "MachineOutside.run_session"
    )
    worktree = work / "worktree-blank"
    worktree.mkdir(exist_ok=True)
    log = work / "blank.jsonl"
    envs, sizes = {}, {}
    for index, (name, line) in enumerate(BLANK_BLOCKS.items()):
        block = work / f"blank-{index}.jsonl"
        block.write_bytes(line * ((1 << 20) // len(line)))
        envs[name] = writer_on_path(work / f"bin-blank-{index}", block, blank_mib)
        sizes[name] = block.stat().st_size * blank_mib
    figures: dict[str, list[float]] = {}
    for _ in range(runs):  # interleaved, so that drift of the machine hits every row alike
        for name, env in envs.items():
            try:
                result = probe("follow", env, worktree=str(worktree), log=str(log), parse=True)
            finally:
                log.unlink(missing_ok=True)
                log.with_name(log.stem + ".stderr").unlink(missing_ok=True)
                log.with_name(log.stem + ".record.json").unlink(missing_ok=True)
            if result["bytes"] != sizes[name]:
                raise RuntimeError(f"the log holds {result['bytes']} bytes, not {sizes[name]}")
            figures.setdefault(f"{name}-cpu", []).append(result["cpu_seconds"])
            figures.setdefault(name, []).append(result["bytes"] / MB / result["seconds"])
    for name in BLANK_BLOCKS:
        cpu = figures[f"{name}-cpu"]
        section.add(
            Row(f"orchestrator CPU, {blank_mib} MiB of {name}", cpu, "s", "< 1", max(cpu) < 1, 2)
        )
        section.add(Row(f"follow, {blank_mib} MiB of {name}", figures[name], "MB/s"))
    section.notes.append(
        "CPU is the orchestrator's own (`ru_utime + ru_stime` of the probe process around "
        "`run_session`, the supervisor and the writer not counted). Blank lines are logged and "
        "dropped by one substitution per read, before the per-line path (issue 15, item 8: "
        "before, each went through it; see the table of changes in bench/RESULTS.md)."
    )
    return section


# 2c. Inspect


def _write_log(path: Path, lines: Sequence[tuple[str, str, int]]) -> None:
    """A Claude init, then each (event, filler, size): the event with its ``@@`` made ``size``
    bytes of ``filler`` repeated, a MiB at a time (no filler: the event as it is)."""
    with path.open("w", encoding="utf-8") as out:
        out.write('{"type":"system","subtype":"init","session_id":"s"}\n')
        for event, filler, size in lines:
            if not filler:
                out.write(event + "\n")
                continue
            head, tail = event.split("@@")
            block = filler * ((1 << 20) // len(filler))
            out.write(head)
            for _ in range(size // len(block)):
                out.write(block)
            out.write(filler * ((size % len(block)) // len(filler)))
            out.write(tail + "\n")


TOOL_CALL = (
    '{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash",'
    '"input":{"command":"echo 12345"}}]}}'
)


def bench_inspect(runs: int, work: Path, fixed: Fixed) -> Section:
    """``thirdshift inspect`` on hostile logs: its peak RSS, and its CPU growing with the log."""
    section = Section("2c. thirdshift inspect: peak RSS and CPU time, text and --json")
    figures: dict[str, list[float]] = {}
    inspected = fixed.inspected()
    for name, lines in inspected.items():
        log = work / "inspected.jsonl"
        _write_log(log, lines)
        try:
            for _ in range(runs):
                for output in ("text", "json"):
                    result = probe("inspect", log=str(log), json_output=output == "json")
                    figures.setdefault(f"{name} {output} rss", []).append(
                        result["maxrss_kb"] / 1024
                    )
                    figures.setdefault(f"{name} {output} s", []).append(result["cpu_seconds"])
        finally:
            log.unlink(missing_ok=True)
    for name in inspected:
        for output in ("text", "json"):
            rss = figures[f"{name} {output} rss"]
            label = f"{name}, {'--json' if output == 'json' else 'text'}"
            section.add(Row(f"peak RSS: {label}", rss, "MB", "< 100", max(rss) < 100, 1))
            section.add(Row(f"CPU: {label}", figures[f"{name} {output} s"], "s", digits=2))
    few, many = fixed.tool_calls
    for output in ("text", "json"):
        growth = ratios(
            figures[f"{many:,} tool calls {output} s"], figures[f"{few:,} tool calls {output} s"]
        )
        section.add(
            Row(
                f"CPU {many:,} / {few:,} tool calls, {output}", growth, "x", "~4 (linear)", digits=2
            )
        )
    section.notes.append(
        'Each run is `thirdshift._cli.main(["inspect", LOG, ...])` in a child process of its own, '
        "stdout to /dev/null; peak RSS is the child's `ru_maxrss`, CPU its user and system "
        "time in `main` (steadier than wall time on a shared machine). The long line and the "
        "long result are over the parse cap (4 MiB), the `{},{},...` lines over the bound of "
        "what a line may take parsed (24 MiB, estimated): logged but never parsed, live or read "
        "back. A tool call is a Bash tool use of 110 bytes, one progress line each; in text, "
        "each is printed through "
        "`shown()`, whose redaction patterns take about half the time (a profile of 100,000)."
    )
    return section


# 3. Interrupt latency


def bench_interrupt(runs: int) -> Section:
    section = Section(f"3. Interrupt latency: SIGINT to every session process gone ({runs} runs)")
    cooperative = probe("interrupt", mode="cooperative", runs=runs, grace=1.0)
    stubborn = probe("interrupt", mode="ignores-sigterm", runs=runs, grace=1.0)
    values = cooperative["ms"]
    section.add(
        Row(
            "cooperative fake claude (exits on SIGTERM)",
            values,
            "ms",
            "< 300",
            median(values) < 300,
            1,
        )
    )
    section.add(Row("fake claude ignoring SIGTERM, stop_grace=1 s", stubborn["ms"], "ms", digits=1))
    left = cooperative["left"] + stubborn["left"]
    section.notes.append(
        "Timed in a child that ran `interrupts.install()`: from `pthread_kill(main, SIGINT)` to "
        "`run_session` raising `Interrupted`, which happens only after the supervisor has exited, "
        "and it exits only when nothing below it is left. "
        + ("No process was left after any run." if not left else f"{left} runs LEFT a process.")
    )
    return section


# 4. Per-session overhead


def bench_overhead(runs: int) -> Section:
    section = Section(f"4. Per-session overhead: a fake claude session ({runs} runs)")
    default = probe("overhead", runs=runs)
    cold = probe("overhead", measured_env(PYTHONDONTWRITEBYTECODE="1"), runs=runs, fresh_fake=True)
    for prefix, result, goal in (("", default, "< 50"), ("PYTHONDONTWRITEBYTECODE=1: ", cold, "")):
        within, direct = result["within_ms"], result["direct_ms"]
        extra = [w - d for w, d in zip(within, direct, strict=True)]
        section.add(Row(f"{prefix}through Sessions.within (real adapter)", within, "ms", digits=1))
        section.add(Row(f"{prefix}the same fake, subprocess.run", direct, "ms", digits=1))
        met = median(extra) < 50 if goal else None
        section.add(Row(f"{prefix}overhead: within - subprocess.run", extra, "ms", goal, met, 1))
        section.add(Row(f"{prefix}within / subprocess.run", ratios(within, direct), "x", digits=2))
        if not prefix:
            unwatched, all_watched = result["unwatched_ms"], result["all_watched_ms"]
            section.add(Row("default watchdogs / none", ratios(within, unwatched), "x", digits=3))
            section.add(
                Row("all three watchdogs / none", ratios(all_watched, unwatched), "x", digits=3)
            )
    section.notes.append(
        "Each run is one session of a fake claude that says one line: through `Sessions.within` "
        "(the supervisor, the log, the reader, the progress lines), and the same fake with the "
        "same argv and prompt by `subprocess.run` into a file, alternately; the overhead is "
        "taken run by run. The first rows run as a user's machine does, caching bytecode. The "
        "PYTHONDONTWRITEBYTECODE=1 rows run the fake from a copy of its package without "
        "cached bytecode, as a fresh checkout on this machine is: every call compiles it. "
        "The watchdog rows compare, in the same rounds, sessions with the default watchdogs "
        "(idle and after-result), with all three (a wall clock too) and with none."
    )
    return section


# 5. Test-suite cost


def _pytest(
    python: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        check=False,
        cwd=ROOT,
        env=env or measured_env(),
        capture_output=True,
        text=True,
    )


def _test_times(python: str, nodes: Sequence[str]) -> dict[str, dict[str, float]]:
    """Each test's setup, call and teardown, in ms (``bench/pytest_timing.py``)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as file:
        env = measured_env(
            PYTHONPATH=os.pathsep.join(filter(None, [str(BENCH), os.environ.get("PYTHONPATH")])),
            THIRDSHIFT_BENCH_TIMES=file.name,
        )
        done = _pytest(python, "-p", "pytest_timing", *nodes, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"pytest failed:\n{done.stdout[-3000:]}")
        times: dict[str, dict[str, float]] = json.loads(Path(file.name).read_text())
    return {node: {when: s * 1000 for when, s in phases.items()} for node, phases in times.items()}


def _make_check(python: str, fixed: Fixed) -> float:
    """What ``make check`` runs, timed as one: the inner loop, mypy with its cache as the last
    run left it, as a developer's is."""
    bin_dir = Path(python).parent
    steps = [
        [str(bin_dir / "ruff"), "check", "src", "tests", "e2e", "bench"],
        [str(bin_dir / "ruff"), "format", "--check", "src", "tests", "e2e", "bench"],
        [str(bin_dir / "mypy"), "--strict", "src", "tests", "e2e"],
    ]
    started = time.perf_counter()
    for step in steps:
        done = subprocess.run(
            step, cwd=ROOT, env=measured_env(), capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(step[:2])} failed:\n{done.stdout[-3000:]}")
    done = _pytest(python, "-n", "auto", *fixed.suite)
    if done.returncode != 0:
        raise RuntimeError(f"pytest failed:\n{done.stdout[-3000:]}")
    return time.perf_counter() - started


def bench_tests(python: str, runs: int, suite_runs: int, fixed: Fixed) -> Section:
    section = Section("5. Test-suite cost")
    twins = {"rule": RULE_TEST, "e2e": E2E_TWIN}
    totals: dict[str, list[float]] = {"rule": [], "e2e": []}
    bodies: dict[str, list[float]] = {"rule": [], "e2e": []}
    for _ in range(runs):
        found = _test_times(python, list(twins.values()))
        for twin, node in twins.items():
            phases = [found[node][phase] for phase in ("setup", "call", "teardown")]
            totals[twin].append(sum(phases))
            bodies[twin].append(phases[1])
    section.add(Row("in-process rule test (setup+call+teardown)", totals["rule"], "ms", digits=1))
    section.add(Row("its end-to-end twin (setup+call+teardown)", totals["e2e"], "ms", digits=1))
    section.add(Row("end-to-end / in-process", ratios(totals["e2e"], totals["rule"]), "x"))
    section.add(Row("in-process rule test, body only", bodies["rule"], "ms", digits=2))
    section.add(Row("end-to-end twin, body only", bodies["e2e"], "ms", digits=1))
    section.add(Row("end-to-end / in-process, bodies", ratios(bodies["e2e"], bodies["rule"]), "x"))
    walls: dict[str, list[float]] = {"1": [], "auto": []}
    failures = []
    for _ in range(suite_runs):
        for workers, times in walls.items():
            started = time.perf_counter()
            # The in-process half only: the whole suite (~2,000 tests, real CLIs included)
            # takes over ten minutes a run serially, too long to run six times here.
            done = _pytest(python, "-n", workers, *fixed.suite)
            times.append(time.perf_counter() - started)
            if done.returncode != 0:
                last = (done.stdout.strip().splitlines() or ["no output"])[-1]
                failures.append(f"-n {workers}: {last}")
    checks = [_make_check(python, fixed) for _ in range(suite_runs)]
    cores = os.cpu_count()
    suite = " ".join(fixed.suite)
    section.add(Row(f"make check: ruff, mypy, pytest -n auto {suite}", checks, "s", digits=1))
    section.add(Row(f"pytest -n 1 {suite} (wall)", walls["1"], "s", digits=1))
    section.add(Row(f"pytest -n auto {suite} (wall, {cores} cores)", walls["auto"], "s", digits=1))
    section.add(Row("-n 1 / -n auto", ratios(walls["1"], walls["auto"]), "x", digits=2))
    section.notes.append(
        f"The twins are `{RULE_TEST}` and `{E2E_TWIN}`, timed by pytest's own clock "
        f"(`bench/pytest_timing.py`) over "
        f"{runs} runs. The fast tier (`{suite}`, in-process) ran {suite_runs} times at each "
        "`-n`, and `make check` (ruff, mypy with its cache warm, then the fast tier with "
        "`-n auto`) as many times."
        + (" Failing runs: " + "; ".join(failures) + "." if failures else "")
    )
    return section


# Running it all


SECTIONS = ("reader", "follow", "blank", "inspect", "interrupt", "overhead", "tests")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (default 5)")
    parser.add_argument("--interrupt-runs", type=int, default=20)
    parser.add_argument("--overhead-runs", type=int, default=20)
    parser.add_argument("--suite-runs", type=int, default=1, help="runs of the in-process suite")
    parser.add_argument("--reader-mb", type=int, default=100)
    parser.add_argument("--follow-mb", type=int, default=1000, help="the big follow")
    parser.add_argument("--follow-small-mb", type=int, default=100)
    parser.add_argument("--follow-long-mb", type=int, default=200, help="the follow of long lines")
    parser.add_argument(
        "--project-python",
        default=str(ROOT / ".venv" / "bin" / "python"),
        help="the Python with the test dependencies, for section 5",
    )
    parser.add_argument(
        "--only",
        nargs="*",
        choices=SECTIONS,
    )
    parser.add_argument("--no-write", action="store_true", help=f"do not update {RESULTS.name}")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="every section once at its smallest size, writing nothing: to see that it runs "
        "(the suite's e2e/test_bench.py does), not to measure",
    )
    args = parser.parse_args(argv)
    only = set(args.only or SECTIONS)
    fixed = Fixed()
    if args.smoke:
        fixed = SMOKE
        args.no_write = True
        args.runs = args.interrupt_runs = args.overhead_runs = args.suite_runs = 1
        args.reader_mb = args.follow_mb = args.follow_small_mb = args.follow_long_mb = 1

    work = Path(tempfile.mkdtemp(prefix="thirdshift-bench-"))
    started = time.monotonic()
    sections: list[Section] = []
    try:
        free = shutil.disk_usage(work).free
        print(f"bench: working in {work} ({free / 1e9:.0f} GB free)", file=sys.stderr)
        steps = [
            ("reader", lambda: bench_reader(args.runs, args.reader_mb * MB)),
            (
                "follow",
                lambda: bench_follow(
                    args.runs,
                    work,
                    args.follow_mb * MB,
                    args.follow_small_mb * MB,
                    args.follow_long_mb * MB,
                    fixed=fixed,
                ),
            ),
            ("blank", lambda: bench_blank(args.runs, work, fixed)),
            ("inspect", lambda: bench_inspect(args.runs, work, fixed)),
            ("interrupt", lambda: bench_interrupt(args.interrupt_runs)),
            ("overhead", lambda: bench_overhead(args.overhead_runs)),
            ("tests", lambda: bench_tests(args.project_python, args.runs, args.suite_runs, fixed)),
        ]
        for name, step in steps:
            if name not in only:
                continue
            if name == "follow" and free < 2.5 * args.follow_mb * MB:
                print(
                    f"bench: too little disk for the follow ({free / 1e9:.1f} GB)", file=sys.stderr
                )
                continue
            print(f"bench: {name}...", file=sys.stderr)
            section_started = time.monotonic()
            sections.append(step())
            print(plain(sections[-1:]), flush=True)
            print(f"bench: {name} took {time.monotonic() - section_started:.0f} s", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    took = time.monotonic() - started
    sdk = _sdk_version()
    text = "\n".join(
        [
            "## Latest run",
            "",
            *machine(),
            f"- claude-agent-sdk: {sdk}",
            f"- Took {took / 60:.1f} min; medians of {args.runs} runs unless a section says "
            "otherwise; measured processes ran without PYTHONDONTWRITEBYTECODE.",
            "",
            "### The goals, in this run",
            "",
            goals(sections),
            markdown(sections),
        ]
    )
    if not args.no_write and only == set(SECTIONS):
        write_block(RESULTS, "bench", text)
        print(f"bench: wrote {RESULTS.relative_to(ROOT)}", file=sys.stderr)
    print(f"bench: done in {took / 60:.1f} min", file=sys.stderr)
    return 0


def _sdk_version() -> str:
    try:
        from importlib.metadata import version

        return version("claude-agent-sdk")
    except Exception:
        return "not installed (its row is skipped)"


if __name__ == "__main__":
    sys.exit(main())
