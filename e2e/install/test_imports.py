"""What a fresh interpreter imports: the library and its test doubles without pytest, the
conformance package, and a Harness plugin installed by entry point.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def test_the_library_and_its_test_doubles_import_without_pytest() -> None:
    # thirdshift demo uses the fakes on a plain install, where pytest is not installed.
    code = (
        "import sys; sys.modules['pytest'] = None\n"
        "import thirdshift, thirdshift.testing, thirdshift._cli.demo\n"
        "from thirdshift.testing.fakecli import FakeCLIs\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)

    assert done.returncode == 0, done.stderr


def test_the_conformance_package_imports_without_pytest() -> None:
    code = "import sys; sys.modules['pytest'] = None\nimport thirdshift.testing.conformance\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)

    assert done.returncode == 0, done.stderr


BUILT_INS = ("claude", "codex", "opencode", "gemini", "qwen")


def _install(site: Path, module: str, source: str) -> None:
    """Lay out a distribution with a ``thirdshift`` entry point, as pip would install it."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[thirdshift]\n{module} = {module}\n")


PLUGIN_SOURCE = """
    from dataclasses import dataclass
    from thirdshift.harness import ClaudeHarness, hookimpl

    @dataclass(frozen=True)
    class Aider(ClaudeHarness):
        name = "aider"

    @hookimpl
    def thirdshift_harnesses():
        return [Aider()]
"""


def test_an_installed_plugin_is_found_by_a_new_process(tmp_path: Path) -> None:
    _install(tmp_path, "thirdshift_aider", PLUGIN_SOURCE)
    code = (
        "import thirdshift.harness._registry as r\n"
        "assert not r._shared, 'importing thirdshift built the registry'\n"
        "print(','.join(r.harness_names()))\n"
        "assert r._shared\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ",".join([*BUILT_INS, "aider"])
