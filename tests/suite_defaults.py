"""What every test of this suite starts from, in both tiers (loaded by pyproject.toml's
``-p suite_defaults``).

- No recorded interrupt, and the signal handlers the test found put back after it. The plugin
  isolates only tests that use its fixtures or markers (a user's other tests are theirs); a
  test here that ran ``thirdshift run`` in-process left its handlers installed, and the next
  test on that xdist worker saw its own Ctrl-C recorded as an interrupt.
- No Hypothesis deadline. A deadline is a timing threshold, and timings belong in ``bench/``:
  on a loaded two-core machine an example of the reader properties took over the default
  200 ms and failed a run that nothing in the code had broken.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import settings

from thirdshift import interrupts

settings.register_profile("thirdshift", deadline=None)
settings.load_profile("thirdshift")


@pytest.fixture(autouse=True)
def no_interrupt_shared() -> Iterator[None]:
    """Run the test inside :func:`thirdshift.interrupts.isolated`."""
    with interrupts.isolated():
        yield
