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


def readme_dotted_names() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = {match.rstrip(".") for match in re.findall(r"\bthirdshift\.[A-Za-z_][\w.]*", text)}
    return sorted(found)


def test_every_name_the_readme_reaches_through_thirdshift_works_after_import_thirdshift() -> None:
    names = readme_dotted_names()
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
