"""OpenTelemetry stays optional, in a fresh interpreter: without a provider nothing is imported or
traced, without the package thirdshift runs its sessions, and worker --otel says which extra.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap


def fresh(code: str, hide: bool = False) -> subprocess.CompletedProcess[str]:
    hidden = textwrap.dedent(
        """
        import sys

        class NoOtel:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None

        sys.meta_path.insert(0, NoOtel())
        """
    )
    return subprocess.run(
        [sys.executable, "-c", (hidden if hide else "") + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


CALL = """
    import sys
    from thirdshift import Ended, claude
    from thirdshift import _telemetry as telemetry

    with telemetry.block("repo"):
        with telemetry.session(claude(), "implement", None, "scan") as call:
            env = call.environment({"TRACEPARENT": "as inherited"})
            assert env == {"TRACEPARENT": "as inherited"}, env
            assert call.tools is None
            call.ended(Ended(session_id="s"))
    """


def test_without_a_provider_nothing_is_imported_traced_or_told() -> None:
    done = fresh(CALL + "assert not any(m.startswith('opentelemetry') for m in sys.modules)\n")
    assert (done.returncode, done.stderr) == (0, "")


def test_with_the_api_imported_but_no_provider_set_nothing_is_traced() -> None:
    done = fresh("import opentelemetry.trace, opentelemetry.metrics\n" + textwrap.dedent(CALL))
    assert (done.returncode, done.stderr) == (0, "")


def test_without_the_package_thirdshift_imports_and_runs_its_sessions() -> None:
    done = fresh(CALL + "import thirdshift._cli, thirdshift._machine.adapter\n", hide=True)
    assert (done.returncode, done.stderr) == (0, "")


def test_worker_otel_without_the_package_says_which_extra_in_one_line_and_exits_2() -> None:
    done = fresh(
        """
        from thirdshift._cli import main
        sys.exit(main(["worker", "--otel", "--address", "127.0.0.1:1", "--task-queue", "q"]))
        """,
        hide=True,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "pip install 'thirdshift[otel]'" in done.stderr
