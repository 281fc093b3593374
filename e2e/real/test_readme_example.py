"""The README's example of testing against the real CLIs, run as a downstream test file would be.

The example is read from its draft in docs/fake-model.md, so the text users copy is what runs
here, on each real CLI (Done when, first bullet, of issue 9).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "fake-model.md"


def readme_example() -> str:
    quoted = "\n".join(
        line.removeprefix("> ").removeprefix(">")
        for line in DOC.read_text().splitlines()
        if line.startswith(">")
    )
    found = re.search(r"```python\n(.*?)```", quoted, re.DOTALL)
    assert found is not None, "no python example in the README draft"
    return found.group(1)


@pytest.mark.real_cli("claude")
def test_the_readme_example_passes_on_the_real_claude(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_downstream=readme_example())
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.real_cli("codex")
def test_the_readme_example_passes_on_the_real_codex(pytester: pytest.Pytester) -> None:
    example = readme_example().replace("claude", "codex")
    assert "fake_model.codex.script" in example
    pytester.makepyfile(test_downstream=example)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
