"""`thirdshift inspect` on hostile logs, in a process of its own: its peak memory stays bounded
whatever a line holds.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from harness_helpers import jsonl

from thirdshift._machine.follow import MAX_PARSED_LINE

PEAK_RSS = """
import resource, subprocess, sys
done = subprocess.run(
    [sys.executable, "-m", "thirdshift._cli", "inspect", *sys.argv[1:]],
    stdout=subprocess.DEVNULL,
    stderr=subprocess.PIPE,
    check=False,
)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def inspect_peak_rss_mb(*args: str | Path) -> float:
    """``thirdshift inspect ARGS``'s peak RSS in MB, measured by a parent of its own (so that
    no other child of this test process counts); the command must succeed."""
    done = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, *map(str, args)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    code, peak_kb = done.stdout.split()
    assert code == "0", done.stdout
    return int(peak_kb) / 1024


def write_event(log: Path, event: str, filler: str, size: int) -> None:
    """A Claude init, then ``event`` with its ``@@`` made ``size`` bytes of ``filler`` repeated,
    written a MiB at a time (never whole in this process)."""
    head, tail = event.split("@@")
    block = filler * ((1 << 20) // len(filler))
    with log.open("w") as out:
        out.write(jsonl(type="system", subtype="init", session_id="s"))
        out.write(head)
        for _ in range(size // len(block)):
            out.write(block)
        out.write(filler * ((size % len(block)) // len(filler)))
        out.write(tail + "\n")


HUGE_LINES = {
    "a 256 MB line": (
        '{"type":"assistant","message":{"content":[{"type":"text","text":"@@"}]}}',
        "x",
        256_000_000,
    ),
    "a 32 MiB result line": ('{"type":"result","subtype":"success","result":"@@"}', "x", 32 << 20),
    # Within the parse cap, but it would take over 100 MB parsed: each {} a dict of its own.
    "a 4 MiB line of {},{},...": (
        '{"type":"result","subtype":"success","result":"ok","x":[@@{}]}',
        "{},",
        MAX_PARSED_LINE - 100,
    ),
}


@pytest.mark.parametrize("output", [[], ["--json"]], ids=["text", "json"])
@pytest.mark.parametrize("shape", sorted(HUGE_LINES))
def test_peak_memory_stays_under_100_mb_whatever_the_line(
    tmp_path: Path, shape: str, output: list[str]
) -> None:
    log = tmp_path / "log.jsonl"
    write_event(log, *HUGE_LINES[shape])
    try:
        assert inspect_peak_rss_mb(log, *output) < 100
    finally:
        log.unlink()
