"""The fake_cli_on_path fixture as downstream test suites load it: its teardown checks,
-p pytest_thirdshift without autoload, xdist."""

from __future__ import annotations

import textwrap

import pytest

DOWNSTREAM = textwrap.dedent(
    """
    import subprocess

    import pytest

    from thirdshift.testing import steps
    from thirdshift.testing.fakecli._steps import escape_setsid  # thirdshift's own: a leftover

    ARGV = ["claude", "-p", "--permission-mode", "auto", "--output-format", "stream-json",
            "--verbose"]


    def call(tmp_path, *extra):
        return subprocess.run(ARGV + list(extra), cwd=tmp_path, input=b"go",
                              capture_output=True, start_new_session=True, timeout=30)


    def test_one_session(fake_cli_on_path, tmp_path):
        fake_cli_on_path.claude.script(steps.run("echo hi > made.txt"), steps.say("ok"))
        assert call(tmp_path).returncode == 0
        assert (tmp_path / "made.txt").read_text() == "hi\\n"
        (only,) = fake_cli_on_path.claude.calls
        assert (only.session_id, only.stdin) == ("fake-session-1", "go")


    def test_unused_script(fake_cli_on_path):
        fake_cli_on_path.codex.script(steps.say("never"))


    @pytest.mark.thirdshift(assert_all_consumed=False)
    def test_unused_script_allowed(fake_cli_on_path):
        fake_cli_on_path.codex.script(steps.say("never"))


    def test_unscripted_call(fake_cli_on_path, tmp_path):
        assert call(tmp_path).returncode == 97


    @pytest.mark.thirdshift(assert_all_consumed=False)
    def test_unscripted_call_is_never_allowed(fake_cli_on_path, tmp_path):
        assert call(tmp_path).returncode == 97


    def test_left_running(fake_cli_on_path, tmp_path):
        fake_cli_on_path.claude.script(escape_setsid(300))
        assert call(tmp_path).returncode == 0
    """
)


def test_the_fixture_downstream_fails_tests_at_teardown_as_documented(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_downstream=DOWNSTREAM)
    # -rN: no short summary, which repeats each error (in full where the CI variable is set).
    result = pytester.runpytest("-p", "no:cacheprovider", "-rN")  # the plugin loads itself
    result.assert_outcomes(passed=6, errors=4)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_unused_script *",
            "*fake_cli_on_path: a script of fake codex was never used: Say(text='never')*",
        ]
    )
    output = result.stdout.str()
    assert output.count("fake claude call 1 ran with no script left (it exited 97)") == 2
    assert "still running after the test, now killed: escape_setsid `sleep 300`" in output
    assert (
        "  (a test that leaves processes running on purpose kills them itself first, with "
        "fake_cli_on_path.kill_survivors())"
    ) in output
    assert "@pytest.mark.thirdshift(assert_all_consumed=False))" in output
    assert "ERROR at teardown of test_unused_script_allowed" not in output
    assert "ERROR at teardown of test_one_session" not in output


def test_the_fixture_with_p_pytest_thirdshift_and_no_autoload(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_downstream=DOWNSTREAM)
    result = pytester.runpytest("-p", "pytest_thirdshift", "-k", "one_session")
    result.assert_outcomes(passed=1)


def test_the_fixture_under_xdist(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the plugins the test needs: loading every installed one costs seconds per worker.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(
        test_parallel=textwrap.dedent(
            """
            import subprocess, time

            import pytest

            from thirdshift.testing import steps


            @pytest.mark.parametrize("n", range(4))
            def test_own_state(fake_cli_on_path, tmp_path, n):
                fake_cli_on_path.codex.script(steps.run("sleep 0.2"), steps.say(f"worker {n}"))
                done = subprocess.run(
                    ["codex", "exec", "--json", "-"], cwd=tmp_path, input=b"x",
                    capture_output=True, start_new_session=True, timeout=30)
                assert done.returncode == 0
                assert b'"thread_id":"fake-thread-1"' in done.stdout
                assert f"worker {n}".encode() in done.stdout
            """
        )
    )
    result = pytester.runpytest_subprocess(
        "-p", "xdist.plugin", "-p", "pytest_thirdshift", "-n", "2", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*2 workers*"])


# The teardown checks hold for the fakes of opencode, Gemini and Qwen too

OTHER_FAKES_DOWNSTREAM = textwrap.dedent(
    """
    import subprocess

    from thirdshift.testing import steps


    def test_left_running(fake_cli_on_path, tmp_path):
        fake_cli_on_path.opencode.script(steps.background("sleep 300"))
        argv = ["opencode", "run", "--format", "json", "--auto"]
        done = subprocess.run(argv, cwd=tmp_path, input=b"go", capture_output=True,
                              start_new_session=True, timeout=30)
        assert done.returncode == 0


    def test_unused(fake_cli_on_path):
        fake_cli_on_path.qwen.script(steps.say("never"))
    """
)


def test_the_fixture_fails_a_test_that_leaves_opencode_work_running(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_downstream=OTHER_FAKES_DOWNSTREAM)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*fake_cli_on_path: still running after the test, now killed: background "
            "`sleep 300` of fake opencode call 1 (pid *)*",
            "*fake_cli_on_path: a script of fake qwen was never used: Say(text='never')*",
        ]
    )
