"""A stand-in ``claude`` for the follow benchmark: stream lines on stdout, as fast as it can.

``python -S writer.py BLOCK COUNT [claude's own arguments...]`` reads its prompt from stdin to
the end (as the real CLI does), then writes the file BLOCK (whole stream lines) COUNT times to
stdout, one ``os.write`` loop per block, and exits 0. Standard library only.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    block_path, count = argv[0], int(argv[1])
    while os.read(0, 1 << 16):
        pass
    with open(block_path, "rb") as file:
        block = memoryview(file.read())
    for _ in range(count):
        view = block
        while view:
            view = view[os.write(1, view) :]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
