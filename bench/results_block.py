"""Where each benchmark writes its figures: a block of its own in bench/RESULTS.md.

A block lies between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``; a run replaces its
block and leaves the rest of the file (the hand-written parts, the other blocks) as it is.
"""

from __future__ import annotations

from pathlib import Path


def write_block(path: Path, name: str, text: str) -> None:
    """Put ``text`` in ``path`` as the block ``name``: in place of the old one, else at the end."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    block = f"{begin}\n{text.strip()}\n{end}"
    old = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        new = head + block + rest.split(end, 1)[1]
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(new, encoding="utf-8")
