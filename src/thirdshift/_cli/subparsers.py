"""The type each subcommand's ``register(subparsers)`` takes, below every subcommand module.

Here rather than in :mod:`thirdshift._cli`, which imports every subcommand: a subcommand that
named it there would close an import circle.
"""

from __future__ import annotations

import argparse
from typing import Any, TypeAlias

Subparsers: TypeAlias = "argparse._SubParsersAction[Any]"
