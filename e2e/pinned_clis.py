"""Where this repository's real_cli tests find the real CLIs, and what they do when they cannot.

The pinned versions live in ``clis/package.json`` and ``clis/package-lock.json``; ``make clis``
installs them into ``clis/node_modules``. A real_cli test runs with ``clis/node_modules/.bin``
first on PATH; without node or the installed CLIs it skips, except under
``THIRDSHIFT_REQUIRE_REAL_CLIS=1`` (set by ``.ci/run``), where it fails. The docs' examples
that run the real CLIs (e2e/docs/test_docs_examples.py) go through the same gate.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

REQUIRE_ENV = "THIRDSHIFT_REQUIRE_REAL_CLIS"
CLIS_DIR = Path(__file__).resolve().parents[1] / "clis"
PINNED_BIN = CLIS_DIR / "node_modules" / ".bin"
ALL_CLIS = ("claude", "codex", "gemini", "opencode", "qwen")


def missing(clis: Sequence[str], bin_dir: Path = PINNED_BIN, path: str | None = None) -> str | None:
    """Why the pinned ``clis`` cannot run here (one line), or None when they can."""
    if shutil.which("node", path=path) is None:
        return "node is not installed (the pinned CLIs need it: install node and npm, `make clis`)"
    for cli in clis:
        if not os.access(bin_dir / cli, os.X_OK):
            return f"the pinned {cli} is not installed in {bin_dir} (run `make clis`)"
    return None


def verdict(problem: str, env: Mapping[str, str]) -> tuple[str, str]:
    """``("fail", text)`` when the environment requires the real CLIs, else ``("skip", text)``."""
    if env.get(REQUIRE_ENV) == "1":
        return "fail", f"real_cli: {problem}; {REQUIRE_ENV}=1 makes this a failure"
    return "skip", f"real_cli: {problem}"


def pinned_first_on_path(clis: Sequence[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Put the pinned ``clis`` first on PATH for this test, or skip it (fail it, when the
    environment requires the real CLIs) with one line saying what is missing."""
    problem = missing(clis)
    if problem is not None:
        action, text = verdict(problem, os.environ)
        if action == "fail":
            pytest.fail(text, pytrace=False)
        pytest.skip(text)
    monkeypatch.setenv("PATH", str(PINNED_BIN), prepend=os.pathsep)


def path_without_clis(folder: Path, path: str) -> str:
    """``path`` with none of the five CLIs on it, whatever the user installed where.

    An entry holding one of them (a global Claude Code in ``~/.local/bin``, ``/usr/local/bin``
    or even ``/usr/bin``) is replaced by a folder in ``folder`` of links to its other programs,
    so that node, sh and the rest stay found. A test puts the CLIs it means to run before this.
    """
    entries = []
    for number, entry in enumerate(path.split(os.pathsep)):
        if not entry or not any(os.access(os.path.join(entry, cli), os.X_OK) for cli in ALL_CLIS):
            entries.append(entry)
            continue
        links = folder / f"{number}"
        links.mkdir(parents=True, exist_ok=True)
        for name in os.listdir(entry):
            if name not in ALL_CLIS and not (links / name).exists():
                (links / name).symlink_to(os.path.join(entry, name))
        entries.append(str(links))
    return os.pathsep.join(entries)
