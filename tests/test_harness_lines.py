"""The condensing both readers share: bash lines, shortening, relative paths, unwrapping."""

from __future__ import annotations

import pytest

from thirdshift.harness._lines import (
    MAX_DETAIL,
    bash_line,
    first_line,
    git_action,
    relative,
    shorten,
    unwrap_command,
)


def test_a_detail_of_up_to_100_characters_is_kept_whole() -> None:
    assert MAX_DETAIL == 100
    assert shorten("") == ""
    assert shorten("x" * 100) == "x" * 100


def test_a_longer_detail_keeps_its_first_100_characters_and_an_ellipsis() -> None:
    assert shorten("x" * 100 + "yz") == "x" * 100 + "…"
    assert len(shorten("a" * 10_000)) == 101


@pytest.mark.parametrize(
    ("command", "line"),
    [
        ("git commit -m 'fix it'", "commit"),
        ("git push origin main", "push"),
        ("git push", "push"),
        ("git commit -am x && git push", "commit and push"),
        ("git push; git commit -m again", "commit and push"),
        ("git add -A\ngit commit -m x", "commit"),
        ("make test | git push", "push"),
        ("make&git push", "push"),
        ("  git   commit   -m spaced", "commit"),
        ("cd repo && git status && git commit -m 'a; b'", "commit"),
    ],
)
def test_a_command_running_git_commit_or_push_reads_as_that(command: str, line: str) -> None:
    assert bash_line(command) == line


@pytest.mark.parametrize(
    ("command", "line"),
    [
        ("grep 'git push' README.md", "$ grep 'git push' README.md"),
        ("echo git commit", "$ echo git commit"),
        ("git status", "$ git status"),
        ("git", "$ git"),
        ("git -C repo commit -m x", "$ git -C repo commit -m x"),
        ("git commits", "$ git commits"),
        ("git pushy", "$ git pushy"),
        ("gitk commit", "$ gitk commit"),
        ("cargo test", "$ cargo test"),
    ],
)
def test_any_other_command_reads_as_its_first_line(command: str, line: str) -> None:
    assert bash_line(command) == line


def test_a_multi_line_command_reads_as_its_first_line() -> None:
    assert bash_line("cd src\nmake all\nmake install") == "$ cd src"
    assert bash_line("\n  cd src\r\nmake") == "$ cd src"  # leading blank lines say nothing


def test_the_first_line_of_a_command_is_shortened() -> None:
    assert bash_line("echo " + "a" * 200) == "$ " + ("echo " + "a" * 200)[:100] + "…"


def test_git_action_needs_the_first_two_words_of_a_part() -> None:
    assert git_action("ls") is None
    assert git_action("echo 'git' commit") is None
    assert git_action("x=1; git commit") == "commit"


def test_first_line_of_text() -> None:
    assert first_line("one\ntwo") == "one"
    assert first_line("") == ""
    assert first_line("only") == "only"


@pytest.mark.parametrize(
    ("path", "base", "shown"),
    [
        ("/home/dev/work/cc/src/run.py", "/home/dev/work/cc", "src/run.py"),
        ("/etc/hosts", "/home/dev/work/cc", "/etc/hosts"),
        ("/home/dev/work/cc2/src/run.py", "/home/dev/work/cc", "/home/dev/work/cc2/src/run.py"),
        ("/home/dev/work/cc", "/home/dev/work/cc", "/home/dev/work/cc"),
        ("src/run.py", "/home/dev/work/cc", "src/run.py"),
        ("/home/dev/work/cc/src/run.py", None, "/home/dev/work/cc/src/run.py"),
        ("/home/dev/work/cc/src/run.py", "", "/home/dev/work/cc/src/run.py"),
        ("/etc/hosts", "/", "/etc/hosts"),  # cwd + "/" is "//", which no path starts with
    ],
)
def test_a_path_is_shown_relative_to_its_base_only_inside_it(
    path: str, base: str | None, shown: str
) -> None:
    assert relative(path, base) == shown


@pytest.mark.parametrize(
    ("command", "script"),
    [
        ("/bin/bash -lc 'sleep 300'", "sleep 300"),
        ("bash -c 'echo hi'", "echo hi"),
        ("sh -c 'ls -la'", "ls -la"),
        ("zsh -lc 'make'", "make"),
        ("/usr/bin/zsh -c 'make'", "make"),
        ("/bin/sh -lc ls", "ls"),
        ("bash -lc 'echo '\\''quoted'\\'' word'", "echo 'quoted' word"),
        ('bash -lc "echo \\"hi\\" there"', 'echo "hi" there'),
        ("bash -lc ''", ""),
    ],
)
def test_a_shell_wrapped_command_unwraps_to_its_script(command: str, script: str) -> None:
    assert unwrap_command(command) == script


@pytest.mark.parametrize(
    "command",
    [
        "sleep 300",
        "fish -c 'echo hi'",
        "bash -x 'echo hi'",
        "bash -lc",
        "bash 'echo hi'",
        "python -c 'print(1)'",
        "mybash -c 'echo hi'",
        "bash -lc echo hi",  # an unquoted script of two words: not three words
        "bash  -lc 'x'",  # two spaces: the flag is the empty word
        "",
    ],
)
def test_any_other_command_is_not_unwrapped(command: str) -> None:
    assert unwrap_command(command) == command


def test_unwrapping_is_done_once_and_keeps_inner_quotes() -> None:
    assert unwrap_command("bash -lc 'bash -lc '\\''ls'\\'''") == "bash -lc 'ls'"
