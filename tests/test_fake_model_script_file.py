"""The script file of ``thirdshift fake-model --script``: JSON read into the fake model's steps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from thirdshift._cli.fake_model import shell_lines
from thirdshift._cli.model_script import ScriptFileError, parse_script, read_script
from thirdshift.testing.steps import (
    at_capacity,
    background,
    edit,
    hang,
    http_error,
    load_skill,
    quota_spent,
    run,
    say,
    stall,
    too_many_requests,
)


def test_each_step_is_its_name_and_its_arguments(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {"run": "ls"},
                {"background": {"command": "sleep 300", "description": "Run the tests"}},
                {"edit": ["notes.txt", "hello\n"]},
                {"load_skill": "release"},
                {"http_error": {"status": 529, "message": "try later", "headers": {"x-a": "1"}}},
                {"at_capacity": None},
                {"too_many_requests": 2.5},
                {"quota_spent": 1767225600},
                {"hang": []},
                {"stall": None},
                {"say": "Listed the files."},
            ]
        )
    )

    assert read_script(script) == (
        run("ls"),
        background("sleep 300", description="Run the tests"),
        edit("notes.txt", "hello\n"),
        load_skill("release"),
        http_error(529, message="try later", headers={"x-a": "1"}),
        at_capacity(),
        too_many_requests(2.5),
        quota_spent(1767225600),
        hang(),
        stall(),
        say("Listed the files."),
    )


def test_an_empty_list_is_a_session_with_no_steps() -> None:
    assert parse_script([]) == ()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"say": "hi"}, "the script must be a JSON list of steps, not an object"),
        ([["say", "hi"]], "the script: step 1 must be an object with one key"),
        ([{"say": "a", "run": "b"}], "the script: step 1 must be an object with one key"),
        ([{"raw": "x"}], 'the script: step 1: no step is named "raw"; the steps are run, '),
        (
            [{"overloaded": None}],
            "the script: step 1: the step \"overloaded\" is now 'at_capacity'",
        ),
        ([{"say": ["a", "b"]}], "the script: step 1 (say): Say.__init__() takes 2 positional"),
        ([{"http_error": 200}], "the script: step 1 (http_error): http_error: status must be"),
        ([{"run": {"command": 3}}], "the script: step 1 (run): command must be a string, not 3"),
        ([{"background": {"command": "x", "grace": True}}], "grace must be a finite number"),
        ([{"too_many_requests": "soon"}], 'retry_after must be a finite number, not "soon"'),
        ([{"quota_spent": 1e400}], "resets_at must be a finite number, not Infinity"),
        ([{"http_error": {"status": 400, "headers": {"a": 1}}}], "headers must be an object"),
        ([{"say": "fine"}, {"stall": "x"}], "the script: step 2 (stall): "),
    ],
)
def test_what_no_step_can_play_is_refused_saying_where(data: Any, message: str) -> None:
    with pytest.raises(ScriptFileError) as refused:
        parse_script(data)

    assert message in str(refused.value), str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[{", "is not JSON: Expecting"),
        ('[{"too_many_requests": NaN}]', "NaN is not a number a step can use"),
        ("[" * 100_000, "is not JSON: nested too deeply"),
    ],
)
def test_a_file_that_is_not_a_script_is_refused_naming_it(
    tmp_path: Path, text: str, message: str
) -> None:
    script = tmp_path / "script.json"
    script.write_text(text)

    with pytest.raises(ScriptFileError) as refused:
        read_script(script)

    assert str(refused.value).startswith(f"{script}"), str(refused.value)
    assert message in str(refused.value)


def test_a_file_that_cannot_be_read_says_why(tmp_path: Path) -> None:
    with pytest.raises(ScriptFileError, match=r"cannot read .*: Is a directory"):
        read_script(tmp_path)
    (tmp_path / "latin1.json").write_bytes(b'[{"say": "caf\xe9"}]')
    with pytest.raises(ScriptFileError, match=r"cannot read .*latin1\.json: 'utf-8' codec"):
        read_script(tmp_path / "latin1.json")


def test_the_shell_lines_unset_what_is_gone_and_export_what_changed_quoted() -> None:
    base = {"HOME": "/home/me", "PATH": "/bin", "CLAUDE_CONFIG_DIR": "/x", "BASH_FUNC_f%%": "()"}
    env = {"HOME": "/tmp/a home's", "PATH": "/bin", "ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}

    assert shell_lines(env, base) == [
        "unset CLAUDE_CONFIG_DIR",
        "export ANTHROPIC_BASE_URL=http://127.0.0.1:1",
        "export HOME='/tmp/a home'\"'\"'s'",
    ]
