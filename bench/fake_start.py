"""How long one call of the fake ``claude`` takes, and what its start-up trick saves.

    .venv/bin/python bench/fake_start.py [RUNS]

Times, interleaved, medians over RUNS (default 30): a fake ``claude`` call that says one line,
``python -S -c pass`` (the floor), and ``python -c "import thirdshift.testing"`` against
``python -c pass`` (what the shims would pay per call if they imported the package the
ordinary way, instead of running ``fakecli/__main__.py`` by its path; see its docstring).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from thirdshift.testing import fakecli as fake
from thirdshift.testing import steps


def _ms(argv: list[str], **options: object) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, **options)  # type: ignore[call-overload]
    return (time.perf_counter() - started) * 1000


def main(runs: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="thirdshift-bench-fake-start-"))
    fakes = fake.FakeCLIs.create(root / "fakecli")
    fakes.copy_output(False)
    argv = [str(fakes.bin_dir / "claude"), "-p", "--output-format", "stream-json", "--verbose"]
    python = sys.executable
    rows: dict[str, list[float]] = {
        "fake claude call": [],
        "python -S -c pass": [],
        "python -c pass": [],
        "python -c 'import thirdshift.testing'": [],
    }
    for index in range(runs + 1):  # the first round is a warm-up, not counted
        fakes.claude.script(steps.say("x"))
        times = [
            _ms(argv, input=b"hi", cwd=root),
            _ms([python, "-S", "-c", "pass"]),
            _ms([python, "-c", "pass"]),
            _ms([python, "-c", "import thirdshift.testing"]),
        ]
        if index:
            for row, value in zip(rows.values(), times, strict=True):
                row.append(value)
    median = {name: statistics.median(values) for name, values in rows.items()}
    for name, value in median.items():
        print(f"{name:40s} {value:6.1f} ms")
    saved = median["python -c 'import thirdshift.testing'"] - median["python -S -c pass"]
    print(f"{'what running by path with -S saves':40s} {saved:6.1f} ms a call")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
