"""Guards over the source itself: things that must never appear in thirdshift."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).parent.parent / "src"


def python_files() -> list[Path]:
    files = sorted(SRC.rglob("*.py"))
    assert files, f"no sources under {SRC}"
    return files


def test_no_subprocess_call_uses_a_shell() -> None:
    offenders = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.keyword) and node.arg == "shell"):
                continue
            if not (isinstance(node.value, ast.Constant) and node.value.value is False):
                offenders.append(f"{path.relative_to(SRC)}:{node.value.lineno}")
    assert offenders == []


def test_no_os_system_or_popen_helpers() -> None:
    banned = {("os", "system"), ("os", "popen"), ("subprocess", "getoutput")}
    offenders = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and (node.value.id, node.attr) in banned
            ):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert offenders == []


def test_the_library_and_its_test_doubles_import_without_pytest() -> None:
    # thirdshift demo uses the fakes on a plain install, where pytest is not installed.
    code = (
        "import sys; sys.modules['pytest'] = None\n"
        "import thirdshift, thirdshift.testing, thirdshift._cli.demo\n"
        "from thirdshift.testing.fakecli import FakeCLIs\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)

    assert done.returncode == 0, done.stderr


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
    statements = list(ast.walk(ast.parse(path.read_text(), str(path))))
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


def test_the_values_module_imports_nothing_of_thirdshift() -> None:
    path = THIRDSHIFT["thirdshift._values"]
    tree = ast.parse(path.read_text(), str(path))
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
    assert imported, "values.py imports nothing at all: is this the right file?"
    assert [name for name in imported if name == "." or name.split(".")[0] == "thirdshift"] == []


def test_the_harness_layer_imports_nothing_of_the_testing_toolkit() -> None:
    offenders = []
    for name, path in THIRDSHIFT.items():
        if name != "thirdshift.harness" and not name.startswith("thirdshift.harness."):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):  # deferred ones too
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
        for node in ast.walk(ast.parse(path.read_text(), str(path))):  # deferred ones too
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
