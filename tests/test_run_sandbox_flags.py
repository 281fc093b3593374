"""``thirdshift run``'s sandbox and log-cap flags, in-process on a ScriptedOutside: what reaches
the Choice and ``within``, and one line and exit 2 for what is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from thirdshift import Sandbox
from thirdshift._cli import main
from thirdshift._cli.run import byte_count
from thirdshift.testing import ScriptedOutside, default_outside


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOutside]:
    monkeypatch.chdir(tmp_path)
    outside = ScriptedOutside()
    with default_outside(outside):
        yield outside


def run(tmp_path: Path, *args: str) -> int:
    return main(["run", "--logs", str(tmp_path / "logs"), *args])


def test_sandbox_flags_make_the_choices_sandbox(scripted: ScriptedOutside, tmp_path: Path) -> None:
    scripted.ends(final_message="done")

    code = run(
        tmp_path,
        "--sandbox",
        "--allow-net",
        "pypi.org",
        "--allow-net",
        "127.0.0.1:8080",
        "--allow-read",
        "/opt",
        "--allow-write",
        "out",
        "--max-pids",
        "64",
        "--max-memory",
        "512M",
        "go",
    )

    assert code == 0
    [call] = scripted.sessions
    assert call.choice is not None
    assert call.choice.sandbox == Sandbox(
        network=("pypi.org", "127.0.0.1:8080"),
        read=("/opt",),
        write=(str(tmp_path / "out"),),
        pids=64,
        memory=512 << 20,
    )
    assert call.choice.env_policy == "minimal"  # the sandbox's default


def test_without_sandbox_the_choice_has_none_and_inherits(
    scripted: ScriptedOutside, tmp_path: Path
) -> None:
    scripted.ends(final_message="done")

    assert run(tmp_path, "go") == 0

    [call] = scripted.sessions
    assert call.choice is not None
    assert (call.choice.sandbox, call.choice.env_policy) == (None, "inherit")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--allow-net", "x.org"], "--allow-net is a setting of the sandbox: add --sandbox"),
        (["--max-memory", "1G"], "--max-memory is a setting of the sandbox: add --sandbox"),
        (["--sandbox", "--allow-net", "https://x.org"], "--allow-net 'https://x.org' is not"),
        (["--sandbox", "--max-pids", "0"], "--max-pids must be at least 1, not 0"),
        (["--sandbox", "--max-pids", "many"], "--max-pids must be a whole number, not 'many'"),
        (["--sandbox", "--max-memory", "1K"], "--max-memory must be at least 1048576"),
        (["--sandbox", "--max-memory", "lots"], "--max-memory must be a whole number of bytes"),
        (["--max-log-bytes", "-1"], "--max-log-bytes must be a whole number of bytes"),
    ],
)
def test_a_refused_flag_is_one_line_and_exit_2(
    scripted: ScriptedOutside,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    says: str,
) -> None:
    assert run(tmp_path, *args, "go") == 2

    err = capsys.readouterr().err
    assert says in err
    assert err.count("\n") == 1
    assert scripted.sessions == []


@pytest.mark.parametrize(
    ("text", "count"),
    [("1024", 1024), ("64k", 64 << 10), ("512M", 512 << 20), ("2GiB", 2 << 30), ("1T", 1 << 40)],
)
def test_a_byte_count_is_a_number_with_a_binary_unit(text: str, count: int) -> None:
    assert byte_count("--max-memory", text) == count
