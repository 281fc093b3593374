"""``temporalio`` is an optional dependency: the core, and the ``thirdshift`` command, work
without it; ``thirdshift.temporal`` and ``thirdshift worker`` say which extra they need."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# Run first in a fresh interpreter: any import of temporalio (or its submodules) fails there,
# as on a machine where the extra was never installed.
HIDE_TEMPORALIO = textwrap.dedent(
    """
    import sys

    class NoTemporal:
        def find_spec(self, name, path=None, target=None):
            if name == "temporalio" or name.startswith("temporalio."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoTemporal())
    """
)


def without_temporalio(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", HIDE_TEMPORALIO + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_core_imports_without_temporalio() -> None:
    done = without_temporalio(
        """
        import thirdshift, thirdshift._cli
        from thirdshift import Sessions, Budget
        assert not any(name.startswith("temporalio") for name in sys.modules)
        print("ok")
        """
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok\n", "")


def test_importing_thirdshift_temporal_without_it_names_the_extra() -> None:
    done = without_temporalio(
        """
        try:
            import thirdshift.temporal
        except ImportError as error:
            print(error)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'thirdshift[temporal]'" in done.stdout


def test_the_worker_command_without_it_says_so_in_one_line_and_exits_2() -> None:
    done = without_temporalio(
        """
        from thirdshift._cli import main
        sys.exit(main(["worker", "--address", "127.0.0.1:1", "--task-queue", "q"]))
        """
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "thirdshift[temporal]" in done.stderr
    assert "Traceback" not in done.stderr
