"""Choosing a containment: the names, the Choice field, and what a machine that allows less does."""

from __future__ import annotations

from pathlib import Path

import pytest

import thirdshift
from thirdshift import ThirdshiftError
from thirdshift._containment import CONTAINMENTS, checked_containment
from thirdshift._machine import MachineOutside
from thirdshift._machine import allowed as machine
from thirdshift.harness import Choice, ClaudeHarness


def test_the_names_are_auto_then_most_isolated_first() -> None:
    assert CONTAINMENTS == ("auto", "cgroup", "namespace", "scan")


def test_an_unknown_name_is_refused_listing_the_known_ones() -> None:
    with pytest.raises(ValueError, match="containment must be one of auto, cgroup, namespace"):
        checked_containment("jail")
    with pytest.raises(ValueError, match="not 'jail'"):
        Choice(ClaudeHarness(), containment="jail")  # type: ignore[arg-type]


def test_every_way_of_making_a_choice_takes_a_containment() -> None:
    assert thirdshift.claude().containment == "auto"
    assert thirdshift.claude(containment="scan").containment == "scan"
    assert thirdshift.codex(containment="cgroup").containment == "cgroup"
    assert thirdshift.opencode(containment="namespace").containment == "namespace"
    assert thirdshift.gemini(containment="scan").containment == "scan"
    assert thirdshift.qwen(containment="scan").containment == "scan"
    assert thirdshift.choice("codex", containment="namespace").containment == "namespace"


@pytest.fixture
def only_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine that allows neither a cgroup nor the namespaces (a locked-down container)."""
    monkeypatch.setattr(machine, "_machine", lambda: machine._Machine(("scan",), None))


@pytest.mark.usefixtures("only_scan")
def test_auto_takes_what_the_machine_allows() -> None:
    assert machine.resolved("auto") == "scan"
    assert machine.resolved("scan") == "scan"


@pytest.mark.usefixtures("only_scan")
@pytest.mark.parametrize("forced", ["cgroup", "namespace"])
def test_forcing_one_the_machine_does_not_allow_is_a_clear_error(forced: str) -> None:
    with pytest.raises(ThirdshiftError) as refused:
        machine.resolved(forced)  # type: ignore[arg-type]

    assert str(refused.value) == (
        f"containment {forced!r} is not allowed on this machine (allowed: scan); "
        "see docs/stopping.md"
    )


@pytest.mark.usefixtures("only_scan")
def test_the_real_adapter_refuses_it_when_built_before_anything_starts() -> None:

    with pytest.raises(ThirdshiftError, match="not allowed on this machine"):
        MachineOutside(
            Path("."),
            thirdshift.claude(containment="cgroup"),
            progress=lambda _: None,
        )


def test_mountinfo_paths_are_unescaped() -> None:
    assert machine._unescaped(r"/sys/fs/cgroup/my\040group\134x") == "/sys/fs/cgroup/my group\\x"
