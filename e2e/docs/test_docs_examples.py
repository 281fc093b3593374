"""Every ```python block of README.md and of every page of the docs site runs as written.

The site's pages are docs/'s Markdown files: `mkdocs build --strict` (test_site.py) fails when
one is not in mkdocs.yml's nav, or the nav names one that is not there.

A block that defines ``test_`` functions is a downstream test module: it runs under pytester,
with the plugin as a user gets it, and every test in it must pass. One whose tests take the
``fake_model`` fixture runs the real CLIs it names: the ones pinned in ``clis/`` go first on
PATH, and without them it skips, as a ``real_cli`` test does (fails, under
``THIRDSHIFT_REQUIRE_REAL_CLIS=1``). Any other block is a script: it runs in a fresh folder
with ``HOME`` there too, and fake ``claude`` and ``codex`` first on PATH (each ready to answer a
few calls), and must exit 0.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from pinned_clis import ALL_CLIS, pinned_first_on_path

from thirdshift.testing.fakecli import FakeCLIs
from thirdshift.testing.steps import say

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
ANSWERS_PER_FAKE = 4


@dataclass(frozen=True)
class Example:
    document: Path
    line: int
    code: str

    @property
    def name(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"

    @property
    def tests(self) -> list[str]:
        return [test.name for test in self._test_functions()]

    @property
    def real_clis(self) -> tuple[str, ...]:
        """The real CLIs the example runs: those it names, when a test takes ``fake_model``."""
        if not any(
            argument.arg == "fake_model"
            for test in self._test_functions()
            for argument in test.args.args
        ):
            return ()
        return tuple(cli for cli in ALL_CLIS if re.search(rf"\b{cli}\b", self.code))

    def _test_functions(self) -> list[ast.FunctionDef]:
        return [
            node
            for node in ast.parse(self.code).body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
        ]


def examples() -> list[Example]:
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(Example(document, line, match.group(1)))
    return found


EXAMPLES = examples()


def test_the_documents_hold_examples_of_every_kind() -> None:
    assert any(example.tests and not example.real_clis for example in EXAMPLES)
    assert any(not example.tests for example in EXAMPLES)
    assert any(set(example.real_clis) >= {"claude", "codex"} for example in EXAMPLES)
    readme = [example for example in EXAMPLES if example.document.name == "README.md"]
    assert any(example.tests for example in readme)
    assert any(not example.tests for example in readme)
    pages = {example.document.name for example in EXAMPLES}
    assert {"getting-started.md", "running-sessions.md", "testing.md"} <= pages


@pytest.mark.parametrize(
    "example", [e for e in EXAMPLES if e.tests], ids=lambda example: example.name
)
def test_a_test_example_passes_under_pytest(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, example: Example
) -> None:
    if example.real_clis:
        pinned_first_on_path(example.real_clis, monkeypatch)
    pytester.makepyfile(test_example=example.code)

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")

    # At least one pass per test function (a parametrized one passes once per case), and
    # nothing failed, errored or skipped.
    passed = result.parseoutcomes().get("passed", 0)
    result.assert_outcomes(passed=passed)
    assert passed >= len(example.tests), result.stdout.str()


@pytest.mark.parametrize(
    "example", [e for e in EXAMPLES if not e.tests], ids=lambda example: example.name
)
def test_a_script_example_runs(tmp_path: Path, example: Example) -> None:
    fakes = FakeCLIs.create(tmp_path / "fakecli")
    for cli in (fakes.claude, fakes.codex):
        for answer in range(ANSWERS_PER_FAKE):
            cli.script(say(f"done ({answer + 1})"))
    folder = tmp_path / "example"
    folder.mkdir()
    (folder / "example.py").write_text(example.code, encoding="utf-8")
    # The fakes first on PATH, their state set and (for a sandboxed session: a worker's are)
    # writable.
    env = {**fakes.env(), "HOME": str(folder)}
    try:
        done = subprocess.run(
            [sys.executable, "example.py"],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        left = fakes.kill_survivors()

    assert done.returncode == 0, done.stderr
    assert left == []
