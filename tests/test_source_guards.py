"""Guards over the source itself: things that must never appear in thirdshift."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).parent.parent / "src"


def python_files() -> list[Path]:
    files = sorted(SRC.rglob("*.py"))
    assert files, f"no sources under {SRC}"
    return files


def test_no_subprocess_call_uses_a_shell() -> None:
    offenders = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.keyword) and node.arg == "shell"):
                continue
            if not (isinstance(node.value, ast.Constant) and node.value.value is False):
                offenders.append(f"{path.relative_to(SRC)}:{node.value.lineno}")
    assert offenders == []


def test_no_os_system_or_popen_helpers() -> None:
    banned = {("os", "system"), ("os", "popen"), ("subprocess", "getoutput")}
    offenders = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and (node.value.id, node.attr) in banned
            ):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert offenders == []


def test_the_library_and_its_test_doubles_import_without_pytest() -> None:
    # thirdshift demo uses the fakes on a plain install, where pytest is not installed.
    code = (
        "import sys; sys.modules['pytest'] = None\n"
        "import thirdshift, thirdshift.testing, thirdshift.cli.demo\n"
        "from thirdshift.testing.fakecli import FakeCLIs\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)

    assert done.returncode == 0, done.stderr
