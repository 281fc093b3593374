"""The docs site builds strictly, and its API reference holds every public name.

``mkdocs build --strict`` (mkdocs.yml's ``validation``) fails on a broken link or anchor, a page
of docs/ left out of the nav and a nav entry with no page; this runs it as ``make docs`` does.
mkdocstrings, though, says nothing of a name it cannot see (``run = Run`` is invisible to a
reader of the source), so each ``__all__`` is checked against the anchors it wrote.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

# The Reference pages render every public module, each whole (tests/, on pythonpath).
from test_public_api import PUBLIC_MODULES

ROOT = Path(__file__).resolve().parents[2]


def places(module: str, name: str) -> set[str]:
    """The anchors that document ``module.name``: its own, or its home module's.

    ``thirdshift.RateLimited`` is documented as ``thirdshift.errors.RateLimited`` (the errors'
    page), and a submodule offered by a package by its own name.
    """
    value = getattr(importlib.import_module(module), name)
    found = {f"{module}.{name}"}
    if isinstance(value, ModuleType):
        found.add(value.__name__)
    elif getattr(value, "__module__", "").startswith("thirdshift.") and not any(
        part.startswith("_") for part in value.__module__.split(".")
    ):
        found.add(f"{value.__module__}.{name}")
    return found


def test_the_site_builds_strictly_with_every_public_name(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr

    anchors: set[str] = set()
    for page in tmp_path.rglob("*.html"):
        anchors |= set(re.findall(r'id="([\w.]+)"', page.read_text(encoding="utf-8")))
    missing = [
        f"{module}.{name}"
        for module in PUBLIC_MODULES
        for name in importlib.import_module(module).__all__
        if name != "__version__" and not places(module, name) & anchors
    ]
    assert missing == [], "the API reference lacks these (see e2e/docs/test_site.py)"
