"""The public API as a downstream project meets it: a new interpreter after `import thirdshift`,
and `mypy --strict` over a project that uses it.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The README and the pages a user of thirdshift reads first: the getting started, the guide, the
# testing guide and the Harness's (the fleet's and the design's also name span attributes,
# `thirdshift.outcome`, and modules a user imports, `thirdshift.temporal`).
USERS_PAGES = [
    ROOT / "README.md",
    *(
        ROOT / "docs" / page
        for page in (
            "getting-started.md",
            "running-sessions.md",
            "clis.md",
            "failures.md",
            "watchdogs-and-budgets.md",
            "records.md",
            "sandbox.md",
            "command-line.md",
            "testing.md",
            "harness.md",
        )
    ),
]


def users_dotted_names() -> list[str]:
    found = set()
    for page in USERS_PAGES:
        text = page.read_text(encoding="utf-8")
        found |= {match.rstrip(".") for match in re.findall(r"\bthirdshift\.[A-Za-z_][\w.]*", text)}
    return sorted(found)


def test_every_name_the_guide_reaches_through_thirdshift_works_after_import() -> None:
    names = users_dotted_names()
    assert "thirdshift.interrupts.install" in names
    # A fresh interpreter: this test's own imports must not make a lazy name resolve.
    script = textwrap.dedent(
        """
        import functools, sys
        import thirdshift
        for dotted in sys.argv[1:]:
            functools.reduce(getattr, dotted.split(".")[1:], thirdshift)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *names], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_mypy_strict_accepts_a_downstream_project(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from thirdshift import Logs\n\nLOGS = Logs\n")
    (tmp_path / "b.py").write_text(
        textwrap.dedent(
            """
            import thirdshift
            from thirdshift import Choice, claude, codex

            c: Choice = claude()
            d: Choice = codex(model="gpt-5.5", effort="high")
            e: Choice = thirdshift.choice("codex")
            thirdshift.interrupts.install()
            outside = thirdshift.testing.ScriptedOutside().ends(session_id="s1")
            """
        )
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / ".mypy_cache"),
            "a.py",
            "b.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
