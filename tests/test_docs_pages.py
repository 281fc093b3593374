"""What the docs say twice says the same: the README's table of CLIs is the site's.

That the site builds (every page in the nav, every link and anchor found, every public name in
the API reference) is e2e/docs/test_site.py's; that its examples run, test_docs_examples.py's.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def table(path: Path, heading: str) -> list[str]:
    """The rows of the first table after ``heading``."""
    lines = path.read_text(encoding="utf-8").split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next(i for i, line in enumerate([*lines, ""][start:], start) if not line.startswith("|"))
    return lines[start:end]


def test_the_readme_shows_the_sites_table_of_clis() -> None:
    readme = table(ROOT / "README.md", "## The CLIs it runs")
    site = table(ROOT / "docs" / "clis.md", "# The CLIs it runs")

    assert len(site) == 7  # the header, its rule, five Harnesses
    assert readme == site, "README.md's table of CLIs differs from docs/clis.md's"
