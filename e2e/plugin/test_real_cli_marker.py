"""The plugin's ``real_cli`` marker, as a downstream suite sees it."""

from __future__ import annotations

from pathlib import Path

import pytest

SUITE = """
import pytest


@pytest.mark.real_cli("codex")
def test_needs_codex():
    pass
"""


def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    pytester.makepyfile(SUITE)
    monkeypatch.setenv("PATH", str(path))
    monkeypatch.delenv("THIRDSHIFT_REQUIRE_REAL_CLIS", raising=False)


def test_a_real_cli_test_skips_without_the_cli_saying_how_to_get_the_pinned_one(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    suite(pytester, monkeypatch, tmp_path)

    result = pytester.runpytest_subprocess("-rs", "--strict-markers")

    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*real_cli: codex is not on PATH; install the pinned version with "
            "`npm install -g @openai/codex@0.171.0`"
        ]
    )


def test_a_real_cli_test_fails_without_the_cli_when_the_environment_requires_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    suite(pytester, monkeypatch, tmp_path)
    monkeypatch.setenv("THIRDSHIFT_REQUIRE_REAL_CLIS", "1")

    result = pytester.runpytest_subprocess()

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*THIRDSHIFT_REQUIRE_REAL_CLIS=1 makes this a failure*"])


def test_a_real_cli_test_runs_when_the_cli_is_on_path(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    codex = tmp_path / "codex"
    codex.write_text("#!/bin/sh\nexit 0\n")
    codex.chmod(0o755)
    suite(pytester, monkeypatch, tmp_path)

    result = pytester.runpytest_subprocess("--strict-markers")

    result.assert_outcomes(passed=1)
