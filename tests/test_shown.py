"""shown(): the one way stream-derived text reaches a person, and where it is used."""

from __future__ import annotations

from pathlib import Path

import pytest

from thirdshift import LaterStepFailed, Logs, Sessions, claude
from thirdshift._progress import to_stderr
from thirdshift._shown import REDACTED, redacted, shown
from thirdshift.testing import ScriptedOutside

HOSTILE = (
    "clear\x1b[2J title\x1b]0;pwned\x07 clip\x1b]52;c;ZXZpbA==\x07 "
    "cr\rbs\x08 del\x7f c1\x9b sep\u2028\u2029 bidi\u202etxt.exe\u2066\u2069"
)


def test_a_line_escapes_every_control_separator_and_bidi_control() -> None:
    assert shown(HOSTILE) == (
        "clear\\x1b[2J title\\x1b]0;pwned\\x07 clip\\x1b]52;c;ZXZpbA==\\x07 "
        "cr\\x0dbs\\x08 del\\x7f c1\\x9b sep\\u2028\\u2029 bidi\\u202etxt.exe\\u2066\\u2069"
    )


@pytest.mark.parametrize("code", [*range(0x202A, 0x202F), *range(0x2066, 0x206A)])
def test_each_bidi_control_is_escaped(code: int) -> None:
    assert shown(f"a{chr(code)}b") == f"a\\u{code:04x}b"


def test_a_line_keeps_plain_text_and_unicode_as_it_is() -> None:
    assert shown("café → ok: 3 tests, 0 failed") == "café → ok: 3 tests, 0 failed"


def test_a_line_never_spans_lines() -> None:
    assert shown("one\nthirdshift: 00:00:00 forged") == "one\\x0athirdshift: 00:00:00 forged"


def test_a_message_keeps_newlines_and_indents_what_follows_them() -> None:
    assert shown("claude exited 1: boom\nthirdshift: forged\n\n\x1b[31mred", "message") == (
        "claude exited 1: boom\n  thirdshift: forged\n\n  \\x1b[31mred"
    )


def test_a_message_shown_twice_is_shown_once() -> None:
    once = shown("a\nb\n c\nsk-abcdefghijklmnopqrstuv", "message")

    assert shown(once, "message") == once


def test_output_keeps_newlines_and_secrets_but_escapes_controls() -> None:
    text = "done\nkey sk-abcdefghijklmnopqrstuv\n\x1b]52;c;x\x07"

    assert shown(text, "output") == "done\nkey sk-abcdefghijklmnopqrstuv\n\\x1b]52;c;x\\x07"


@pytest.mark.parametrize(
    ("secret", "seen"),
    [
        (
            "curl -H 'Authorization: Bearer abc.def-123'",
            f"curl -H 'Authorization: Bearer {REDACTED}'",
        ),
        ("authorization: token 0123456789abcdef", f"authorization: token {REDACTED}"),
        ("export T=Bearer eyJhbGciOiJIUzI1NiJ9", f"export T=Bearer {REDACTED}"),
        ("OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234", f"OPENAI_API_KEY={REDACTED}"),
        ("key sk-proj-abcdefghijklmnop1234", f"key sk-{REDACTED}"),
        ("key sk-ant-api03-abcdefghijklmnopqrstu", f"key sk-{REDACTED}"),
        (
            "git push https://ghp_abcdefghijklmnopqrstuvwx0123@github.com",
            f"git push https://ghp_{REDACTED}@github.com",
        ),
        ("gho_abcdefghijklmnopqrstuvwxyz", f"gho_{REDACTED}"),
        ("github_pat_11ABCDEFG0123456789_abcdefghij", f"github_pat_{REDACTED}"),
        ("aws AKIAIOSFODNN7EXAMPLE done", f"aws AKIA{REDACTED} done"),
        ("slack xoxb-123456789012-abcdefgh", f"slack xoxb-{REDACTED}"),
        ("mysql --password=hunter2 db", f"mysql --password={REDACTED} db"),
        ("PASSWORD: 'two words'", f"PASSWORD: '{REDACTED}'"),
        ("?user=me&passwd=s3cr3t&x=1", f"?user=me&passwd={REDACTED}&x=1"),
    ],
)
def test_common_secret_shapes_are_redacted(secret: str, seen: str) -> None:
    assert redacted(secret) == seen
    assert shown(secret) == seen
    assert shown(secret, "message") == seen


@pytest.mark.parametrize(
    "harmless",
    ["task-1234", "sk-short", "the bearer of bad news", "AKIA", "password reset", "ghp_x"],
)
def test_text_that_merely_looks_alike_is_left_alone(harmless: str) -> None:
    assert redacted(harmless) == harmless


# Where it is used


def test_the_default_progress_sink_shows_each_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    to_stderr("$ curl -H 'Authorization: Bearer abcdefgh123' \x1b]0;x\x07\nthirdshift: forged")

    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.endswith(
        f"$ curl -H 'Authorization: Bearer {REDACTED}' \\x1b]0;x\\x07\\x0athirdshift: forged\n"
    )


def test_a_scripted_outside_hands_progress_on_shown_as_the_real_adapter_does(
    tmp_path: Path,
) -> None:
    outside = ScriptedOutside().ends(killed=("sleep 9\x1b[2J sk-abcdefghijklmnopqrstuv",))
    heard: list[str] = []

    with Sessions.within(
        Logs(tmp_path, "r"), tmp_path, claude(), outside=outside, progress=heard.append
    ) as s:
        s.run("implement", "go")

    assert heard[-1] == (
        "implement: the session ended with a background task still running "
        f"(sleep 9\\x1b[2J sk-{REDACTED}), which was killed; "
        "carrying on, as it may have been abandoned"
    )
    assert "\x1b[2J sk-abcdefghijklmnopqrstuv" in outside.progress[-1]  # recorded as reported


def test_later_step_failed_shows_the_killed_work_and_indents_the_cause() -> None:
    error = LaterStepFailed(
        ("implement session ended with a background task still running (x\x1b]52;c;e\x07)",),
        RuntimeError("no PR\nthirdshift: forged"),
    )

    assert str(error) == (
        "implement session ended with a background task still running (x\\x1b]52;c;e\\x07), "
        "and a later step failed: no PR\n  thirdshift: forged"
    )
    assert str(error.cause) == "no PR\nthirdshift: forged"


def test_inspect_shows_every_stream_value_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from thirdshift._cli.inspect import as_text

    text = as_text(
        {
            "harness": "claude",
            "progress": ["$ echo \x1b[2J"],
            "session_id": "s\x1b1",
            "summary": "\u202esummary",
            "final_message": "done\n\x1b]52;c;x\x07\nthirdshift: forged",
            "killed": ["sleep \x07"],
            "failed": True,
            "error": "boom\nthirdshift: forged",
            "failure": None,
        }
    )

    assert not {"\x1b", "\x07", "\u202e"} & set(text)
    assert text.splitlines() == [
        "$ echo \\x1b[2J",
        "",
        "harness: claude",
        "session id: s\\x1b1",
        "summary: \\u202esummary",
        "final message:",
        "  done",
        "  \\x1b]52;c;x\\x07",
        "  thirdshift: forged",
        "killed background work:",
        "  sleep \\x07",
        "failed: yes",
        "error: boom",
        "  thirdshift: forged",
    ]
