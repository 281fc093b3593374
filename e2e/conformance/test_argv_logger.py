"""The conformance suite's argv logger: a real program that logs each call's argv, then runs the
CLI it stands for.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from thirdshift.testing.conformance._players import argv_logger, logged_argvs


def test_the_argv_logger_logs_each_call_s_argv_and_is_the_real_program(tmp_path: Path) -> None:
    argv_file = tmp_path / "calls.argv"
    argv_logger(tmp_path / "bin", "echo", "/bin/echo", argv_file)

    first = subprocess.run(
        [tmp_path / "bin" / "echo", "two words", ""], capture_output=True, text=True, check=True
    )
    subprocess.run([tmp_path / "bin" / "echo", "-n", "x"], capture_output=True, check=True)

    assert first.stdout == "two words \n"
    assert logged_argvs(argv_file, "echo") == [("echo", "two words", ""), ("echo", "-n", "x")]
