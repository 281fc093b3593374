"""The worker's policy, which no request can loosen: each rule refuses what it should, naming
itself, and lets the rest through (in-process: the rules are one pure function)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from thirdshift import Sandbox
from thirdshift.temporal import RequestRefused, SessionRequest, WorkerPolicy
from thirdshift.temporal._policy import refusal, sandbox_for

HERE = ("cgroup", "namespace", "scan")  # what a machine allowing all three says


def asked(worktree: Path | str = "/trees/a", **more: Any) -> SessionRequest:
    return SessionRequest(worktree=str(worktree), kind="fix", prompt="go", **more)


def refused(policy: WorkerPolicy, request: SessionRequest, here: tuple[str, ...] = HERE) -> str:
    found = refusal(policy, request, allowed=lambda: here)
    return "" if found is None else found.rule


def test_by_default_a_request_goes_anywhere_but_passes_no_extra_args() -> None:
    assert refused(WorkerPolicy(), asked()) == ""
    assert refused(WorkerPolicy(), asked(extra_args=("--settings", "hook.json"))) == "extra_args"
    allowing = WorkerPolicy(allow_extra_args=True)
    assert refused(allowing, asked(extra_args=("--max-turns", "3"))) == ""


def test_a_worktree_must_resolve_inside_a_root(tmp_path: Path) -> None:
    trees, other = tmp_path / "trees", tmp_path / "other"
    (trees / "a").mkdir(parents=True)
    other.mkdir()
    (trees / "escape").symlink_to(other)
    policy = WorkerPolicy(worktrees=(str(tmp_path / "elsewhere"), str(trees)))

    assert refused(policy, asked(trees / "a")) == ""
    assert refused(policy, asked(trees)) == ""
    assert refused(policy, asked(other)) == "worktrees"
    assert refused(policy, asked(trees / "a" / ".." / ".." / "other")) == "worktrees"
    assert refused(policy, asked(trees / "escape")) == "worktrees"  # through a symlink
    assert refused(policy, asked(f"{trees}-sibling")) == "worktrees"


@pytest.mark.parametrize(
    ("worker", "request_asks", "here", "rule"),
    [
        ("auto", "auto", HERE, ""),
        ("auto", "cgroup", HERE, ""),
        ("auto", "scan", HERE, "containment"),
        ("auto", "namespace", HERE, "containment"),
        ("auto", "scan", ("namespace", "scan"), "containment"),
        ("auto", "scan", ("scan",), ""),  # the most this machine allows
        ("namespace", "namespace", HERE, ""),
        ("namespace", "cgroup", HERE, ""),
        ("namespace", "scan", HERE, "containment"),
        ("scan", "scan", HERE, ""),
    ],
)
def test_a_request_s_containment_is_at_least_the_worker_s(
    worker: str, request_asks: str, here: tuple[str, ...], rule: str
) -> None:
    policy = WorkerPolicy(containment=worker)

    assert refused(policy, asked(containment=request_asks), here) == rule


def test_a_refusal_names_its_rule_and_is_a_configuration_error() -> None:
    found = refusal(WorkerPolicy(), asked(extra_args=("--settings", "x")), allowed=lambda: HERE)

    assert isinstance(found, RequestRefused)
    assert found.rule == "extra_args"
    assert str(found).startswith("refused by the worker's policy (extra_args): ")
    assert "--allow-extra-args" in str(found)


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"containment": "strong"}, ValueError),
        ({"worktrees": ("relative/trees",)}, ValueError),
        ({"worktrees": ("",)}, ValueError),
        ({"worktrees": "/one/string"}, TypeError),
    ],
)
def test_a_policy_that_cannot_be_is_refused_as_it_is_made(
    fields: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        WorkerPolicy(**fields)


def test_a_request_s_sandbox_reaches_only_paths_in_the_roots_and_endpoints_the_worker_allows(
    tmp_path: Path,
) -> None:
    trees = tmp_path / "trees"
    (trees / "a").mkdir(parents=True)
    policy = WorkerPolicy(worktrees=(str(trees),), network=("pypi.org",))

    def with_sandbox(**sandbox: Any) -> str:
        return refused(policy, asked(trees / "a", sandbox=Sandbox(**sandbox)))

    assert with_sandbox(read=(str(trees / "a" / "data"),), network=("pypi.org:443",)) == ""
    assert with_sandbox(read=("/root/.ssh",)) == "sandbox"
    assert with_sandbox(write=(str(tmp_path / "elsewhere"),)) == "sandbox"
    assert with_sandbox(network=("169.254.169.254:80",)) == "sandbox"


def test_without_roots_a_request_s_sandbox_paths_stay_in_its_worktree(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    own = asked(tmp_path / "a", sandbox=Sandbox(write=(str(tmp_path / "a" / "out"),)))
    other = asked(tmp_path / "a", sandbox=Sandbox(write=(str(tmp_path / "b"),)))

    assert (refused(WorkerPolicy(), own), refused(WorkerPolicy(), other)) == ("", "sandbox")


def test_every_session_is_sandboxed_unless_the_worker_says_otherwise() -> None:
    on, off = WorkerPolicy(network=("pypi.org",)), WorkerPolicy(sandbox=False)

    assert sandbox_for(on, asked()) == Sandbox(network=("pypi.org",))
    assert sandbox_for(off, asked()) is None
    # A request's own sandbox is honoured either way, with the worker's endpoints.
    assert sandbox_for(off, asked(sandbox=Sandbox(pids=64))) == Sandbox(pids=64)
    assert sandbox_for(on, asked(sandbox=Sandbox(pids=64))) == Sandbox(
        network=("pypi.org",), pids=64
    )


def test_the_worker_s_endpoints_are_checked_when_the_policy_is_made() -> None:
    with pytest.raises(ValueError, match="network endpoint 'http://x'"):
        WorkerPolicy(network=("http://x",))
