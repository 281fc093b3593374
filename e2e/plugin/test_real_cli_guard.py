"""The plugin's guard: a test that runs a real agent CLI without a thirdshift fixture or the
``real_cli`` marker fails in one line, before the CLI starts; the ini option turns it off."""

from __future__ import annotations

from pathlib import Path

import pytest

# A `claude` that says one result and exits: the "real" one, outside the test's temp folders.
CLAUDE = (
    "#!/bin/sh\n"
    "cat >/dev/null\n"
    'echo \'{"type":"result","subtype":"success","is_error":false,"result":"hi",'
    '"session_id":"s1","num_turns":1}\'\n'
)
FORGOT = """
from thirdshift import Logs, Sessions, claude


def run_one(tmp_path):
    logs = Logs(tmp_path / "logs", "repo")
    with Sessions.within(logs, tmp_path, claude(), progress=lambda _line: None) as sessions:
        return sessions.run_to_final_message("implement", "go")


def test_forgot_the_fixture(tmp_path):
    run_one(tmp_path)


@pytest.mark.real_cli("claude")
def test_means_it(tmp_path):
    assert run_one(tmp_path) == "hi"
"""


@pytest.fixture
def real_claude_on_path(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    bin_dir = tmp_path_factory.mktemp("real-bin")
    (bin_dir / "claude").write_text(CLAUDE)
    (bin_dir / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return bin_dir / "claude"


def test_a_forgotten_fixture_fails_in_one_line_and_the_marker_lets_it_run(
    pytester: pytest.Pytester, real_claude_on_path: Path
) -> None:
    pytester.makepyfile("import pytest\n" + FORGOT)

    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly")

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*thirdshift: this test would run the real claude ({real_claude_on_path}) on your "
            "credentials: give it a thirdshift fixture (fake_cli_on_path, fake_model, "
            'scripted_outside) or @pytest.mark.real_cli("claude") (thirdshift_guard_real_clis '
            "= false in the ini turns this off)"
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_the_ini_option_turns_the_guard_off(
    pytester: pytest.Pytester, real_claude_on_path: Path
) -> None:
    pytester.makeini("[pytest]\nthirdshift_guard_real_clis = false\n")
    pytester.makepyfile("import pytest\n" + FORGOT)

    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_a_stand_in_the_test_wrote_in_its_own_folder_is_no_real_cli(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        "import os\n"
        "import pytest\n"
        + FORGOT.replace(
            "def test_forgot_the_fixture(tmp_path):\n",
            "def test_forgot_the_fixture(tmp_path, monkeypatch):\n"
            "    (tmp_path / 'claude').write_text(" + repr(CLAUDE) + ")\n"
            "    (tmp_path / 'claude').chmod(0o755)\n"
            "    monkeypatch.setenv('PATH', f\"{tmp_path}:{os.environ['PATH']}\")\n",
        )
    )
    monkeypatch.setenv("PATH", "/usr/bin:/bin")

    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "forgot")

    result.assert_outcomes(passed=1)
