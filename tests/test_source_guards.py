"""Guards over the source itself: things that must never appear in thirdshift, and what the
fast tier (``tests/``) never does."""

from __future__ import annotations

import ast
import functools
import os
from pathlib import Path

import pytest

from thirdshift import Logs, Sessions, claude

SRC = Path(__file__).parent.parent / "src"
TESTS = Path(__file__).parent


def python_files() -> list[Path]:
    files = sorted(SRC.rglob("*.py"))
    assert files, f"no sources under {SRC}"
    return files


@functools.cache
def parsed(path: Path) -> ast.Module:
    """``path`` parsed, once per run: every guard walks every file."""
    return ast.parse(path.read_text(), str(path))


def test_no_subprocess_call_uses_a_shell() -> None:
    offenders = []
    for path in python_files():
        for node in ast.walk(parsed(path)):
            if not (isinstance(node, ast.keyword) and node.arg == "shell"):
                continue
            if not (isinstance(node.value, ast.Constant) and node.value.value is False):
                offenders.append(f"{path.relative_to(SRC)}:{node.value.lineno}")
    assert offenders == []


def test_no_os_system_or_popen_helpers() -> None:
    banned = {("os", "system"), ("os", "popen"), ("subprocess", "getoutput")}
    offenders = []
    for path in python_files():
        for node in ast.walk(parsed(path)):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and (node.value.id, node.attr) in banned
            ):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert offenders == []


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


THIRDSHIFT = {module_name(path): path for path in sorted((SRC / "thirdshift").rglob("*.py"))}


def imported_modules(path: Path) -> set[str]:
    """The thirdshift modules ``path`` imports: at import time, under TYPE_CHECKING, and
    deferred into a function. A deferred import closes no circle at import time, but it ties
    the two modules together all the same: a reader of either must know the other."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    statements = list(ast.walk(parsed(path)))
    found: set[str] = set()
    for node in statements:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                kept = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*kept, *([node.module] if node.module else [])])
            for alias in node.names:
                whole = f"{base}.{alias.name}"
                found.add(whole if whole in THIRDSHIFT else base)
    return {name for name in found if name in THIRDSHIFT and name != me}


def import_graph() -> dict[str, set[str]]:
    return {name: imported_modules(path) for name, path in THIRDSHIFT.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle: each strongly connected set of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(graph[module]):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            circle = [stack.pop()]
            while circle[-1] != module:
                circle.append(stack.pop())
            if len(circle) > 1:
                found.append(sorted(circle))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_graph_sees_type_checking_imports() -> None:
    # environment.py names Choice for its annotations only: the edge must still be there.
    assert "thirdshift.harness._base" in import_graph()["thirdshift._environment"]


def test_the_graph_sees_deferred_imports() -> None:
    # Sessions.within imports the wiring only when called, so that the rules load no process
    # code: the edge is there all the same.
    assert "thirdshift._wiring" in import_graph()["thirdshift._sessions"]


def test_the_cycle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_circle_among_thirdshift_modules() -> None:
    assert cycles(import_graph()) == []


@pytest.mark.parametrize("floor", ["thirdshift._values", "thirdshift._watchdogs"])
def test_the_values_modules_import_nothing_of_thirdshift(floor: str) -> None:
    path = THIRDSHIFT[floor]
    tree = parsed(path)
    imported = [
        name
        for node in ast.walk(tree)
        for name in (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or "."]
            if isinstance(node, ast.ImportFrom)
            else []
        )
    ]
    assert imported, f"{floor} imports nothing at all: is this the right file?"
    assert [name for name in imported if name == "." or name.split(".")[0] == "thirdshift"] == []


def test_the_harness_layer_imports_nothing_of_the_testing_toolkit() -> None:
    offenders = []
    for name, path in THIRDSHIFT.items():
        if name != "thirdshift.harness" and not name.startswith("thirdshift.harness."):
            continue
        for node in ast.walk(parsed(path)):  # deferred ones too
            modules = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{name}: {m}" for m in modules if m.startswith("thirdshift.testing")]
    assert offenders == []


def test_the_rules_and_the_readers_never_reach_the_telemetry() -> None:
    """Spans sit in the adapter and the wiring around ``within``; the rules stay telemetry-free,
    and a Harness only tells of tool calls (``report_tool_calls``), never of spans."""
    offenders = []
    for name, path in THIRDSHIFT.items():
        if name != "thirdshift._sessions" and not name.startswith("thirdshift.harness"):
            continue
        for node in ast.walk(parsed(path)):  # deferred ones too
            modules = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [f"{node.module or ''}.{alias.name}" for alias in node.names]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [
                f"{name}: {m}"
                for m in modules
                if m.startswith(("opentelemetry", "thirdshift._telemetry", "thirdshift._otlp"))
            ]
    assert offenders == []


# The fast tier: tests/ starts no process (tests/fast_tier.py refuses one while a test runs).

# What starts a process, or stands for one, by the names a test would use.
SPAWNING_MODULES = {"subprocess", "multiprocessing", "pexpect", "pty", "temporal_server"}
SPAWNING_NAMES = {"FakeCLIs", "FakeModel", "running_dev_server", "DevServer"}
SPAWNING_FIXTURES = {"fake_cli_on_path", "fake_model", "temporal_server", "toy_on_path"}
SPAWNING_CALLS = {"runpytest_subprocess", "spawn", "fork", "posix_spawn", "posix_spawnp", "system"}


def spawning_uses(path: Path) -> list[str]:
    """Each place in ``path`` that names a way to start a process, as ``line: what``."""
    found = []
    for node in ast.walk(parsed(path)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names if alias.name in SPAWNING_MODULES]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module.split(".")[0] in SPAWNING_MODULES or module.endswith("_dev_server"):
                names = [module]
            names += [alias.name for alias in node.names if alias.name in SPAWNING_NAMES]
        elif isinstance(node, ast.Name) and node.id in SPAWNING_NAMES:
            names = [node.id]
        elif isinstance(node, ast.Attribute) and node.attr in SPAWNING_NAMES | SPAWNING_CALLS:
            names = [node.attr]
        elif isinstance(node, ast.arg) and node.arg in SPAWNING_FIXTURES:
            names = [node.arg]
        found += [f"{node.lineno}: {name}" for name in names]  # type: ignore[attr-defined]
    return found


def test_the_fast_tier_names_no_way_to_start_a_process() -> None:
    offenders = {
        path.name: uses
        for path in sorted(TESTS.glob("*.py"))
        if path.name != "fast_tier.py" and (uses := spawning_uses(path))
    }
    assert offenders == {}, "move these to e2e/, by subject (the fast tier starts no process)"


def test_the_guard_sees_each_way(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import subprocess\n"
        "from thirdshift.testing.fakecli import FakeCLIs\n"
        "def test_x(fake_model, pytester):\n"
        "    pytester.runpytest_subprocess()\n"
    )
    assert spawning_uses(sample) == [
        "1: subprocess",
        "2: FakeCLIs",
        "3: fake_model",
        "4: runpytest_subprocess",
    ]


def test_a_session_without_a_stand_in_fails_here_saying_where_it_belongs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "claude").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")

    with (
        pytest.raises(AssertionError, match=r"^tests/ starts no process .* belongs in e2e/"),
        Sessions.within(Logs(tmp_path, "repo"), tmp_path, claude(), progress=print) as sessions,
    ):
        sessions.run("implement", "go")
