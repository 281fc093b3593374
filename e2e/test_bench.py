"""``make bench`` runs: each of its scripts, every section once at its smallest size.

A refactor that breaks a benchmark (a probe that imports a moved module, a stand-in reader that
lacks a member the contract gained) fails here, not on the next ``make bench``. The figures are
not judged: timings belong in ``bench/``, measured in one run, never as a pass or fail here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUN_SECTIONS = ("reader", "follow", "blank", "inspect", "interrupt", "overhead", "tests")
SMALLEST = {
    "run": ["--smoke", "--project-python", sys.executable],
    "containment": ["--runs", "1", "--counts", "1", "--no-write"],
    "fleet": ["--sizes", "1", "--seconds", "0.5", "--no-write"],
}


@pytest.mark.parametrize("script", SMALLEST)
def test_every_bench_section_runs_at_its_smallest_size(script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / f"{script}.py"), *SMALLEST[script]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, f"bench/{script}.py failed:\n{done.stderr[-4000:]}"
    if script == "run":  # no section left out on the way (as one is when the disk is short)
        took = re.findall(r"^bench: (\w+) took", done.stderr, re.MULTILINE)
        assert took == list(RUN_SECTIONS), done.stderr
