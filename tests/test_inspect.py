"""``thirdshift inspect LOG``: whole texts, detection, its exit-2 cases, as a process.

Every capture read by inspect, text and JSON: test_inspect_captures.py; odd and huge logs:
test_inspect_odd_logs.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness_helpers import inspect, jsonl, stdout_of

NO_RECORD = (
    "record: none beside the log (the session is still running, thirdshift was stopped before "
    "it wrote one, or an older thirdshift ran it), so this is the stream alone"
)


def test_the_whole_text_of_a_session_with_killed_work(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = inspect(capsys, stdout_of("codex-uexec-bg"))
    assert code == 0
    assert out == (
        "session started\n"
        "$ sleep 300\n"
        "\n"
        "harness: codex\n"
        "session id: 01a22ac8-2f15-7e40-9412-9d1a398a7bf5\n"
        "summary: 40 input tokens (0 cached), 16 output tokens\n"
        "final message:\n"
        '  MOCK-FINAL: tool finished; output was "Chunk ID: 1a9bc5\\nWall time: 1.0020 seconds'
        '\\nProcess running with session ID 86929\\nOriginal token count: 0\\nOutput:\\n"\n'
        "killed background work:\n"
        "  sleep 300\n"
        "failed: no\n"
        f"{NO_RECORD}\n"
    )


def test_the_whole_text_of_a_failed_session(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = inspect(capsys, stdout_of("claude-api-401"))
    assert code == 0
    assert out == (
        "session started\n"
        "\n"
        "harness: claude\n"
        "session id: 6411821f-0a79-42cf-8b5b-6da9ce19965d\n"
        "summary: 1 turn, $0.00\n"
        "final message:\n"
        "  Invalid API key · Fix external API key\n"
        "killed background work: none\n"
        "failed: yes\n"
        "error: Invalid API key · Fix external API key\n"
        "failure: AuthFailed\n"
        f"{NO_RECORD}\n"
    )


def test_a_multi_line_final_message_is_indented(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(
        jsonl(type="thread.started", thread_id="t")
        + jsonl(type="item.completed", item={"id": "a", "type": "agent_message", "text": "a\nb"})
        + jsonl(type="error", message="Reconnecting... 1/5")
    )
    _, out, _ = inspect(capsys, log)
    assert "final message:\n  a\n  b\n" in out
    assert "failed: no\nlast error: Reconnecting... 1/5\n" in out


# Detection and --harness


def test_the_dialect_is_detected_past_lines_of_neither(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(
        b"Reading additional input from stdin...\n"
        b'{"type": "something_else"}\n'
        b"[1, 2]\n" + stdout_of("codex-uexec-bg").read_bytes()
    )
    code, out, _ = inspect(capsys, log, "--json")
    assert code == 0
    assert json.loads(out)["harness"] == "codex"
    assert json.loads(out)["killed"] == ["sleep 300"]


def test_a_claude_log_without_its_head_is_still_claude(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"".join(stdout_of("claude-fg-tool").read_bytes().splitlines(True)[1:]))
    code, out, _ = inspect(capsys, log, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["harness"] == "claude"
    assert report["session_id"] is None  # it came with the init that is gone
    assert report["progress"] == ["$ echo hi-from-tool"]


def test_harness_overrides_detection(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = inspect(capsys, stdout_of("claude-bg-skipperms"), "--harness", "codex", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["harness"] == "codex"
    assert report["session_id"] is None  # a Claude stream read as Codex says nothing
    assert report["progress"] == []


def test_harness_claude_on_a_claude_log(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = inspect(
        capsys, stdout_of("claude-bg-skipperms"), "--harness", "claude", "--json"
    )
    assert (code, err) == (0, "")
    assert json.loads(out)["killed"] == ["Sleep for five minutes in the background"]


def test_an_unknown_harness_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = inspect(capsys, stdout_of("claude-fg-tool"), "--harness", "goose")
    assert (code, out) == (2, "")
    assert err.startswith(
        "thirdshift: unknown Harness goose: choose one of claude, codex, opencode"
    )
    assert err.count("\n") == 1


def test_a_line_that_a_named_harness_reads_counts_as_its_stream(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A rate-limit event alone is of no type that detection knows, yet Claude's reader reads
    # it: its progress line is printed as it comes, so the log cannot be refused afterwards.
    log = tmp_path / "log.jsonl"
    log.write_text(stdout_of("claude-usagewarn-oauth").read_text().splitlines()[2] + "\n")

    code, out, err = inspect(capsys, log, "--harness", "claude")

    assert (code, err) == (0, "")
    assert out.startswith("usage warning: 92% of the five-hour limit used, resets at ")
    assert "\nharness: claude\n" in out


# Exit 2


def assert_one_line_error(code: int, out: str, err: str, *fragments: str) -> None:
    assert code == 2
    assert out == ""
    assert err.startswith("thirdshift: ")
    assert err.endswith("\n")
    assert err.count("\n") == 1
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err


def test_a_missing_log_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    assert_one_line_error(
        *inspect(capsys, missing), f"cannot read {missing}", "No such file or directory"
    )


def test_a_folder_without_logs_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a log")
    assert_one_line_error(
        *inspect(capsys, tmp_path), f"{tmp_path} holds no Session log (no .jsonl file)"
    )


def test_a_path_through_a_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    assert_one_line_error(*inspect(capsys, file / "log.jsonl"), "cannot read", "Not a directory")


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\n\n",
        b"not json at all\n",
        b"[1, 2]\n42\nnull\n",
        b'{"type": "something_else"}\n{"type": 7}\n{}\n',
        b'{"type": "system", "subtype": "init"',  # truncated
        b"\xff\xfe\x00garbage\n",
        b'{"type": "error", "message": "error alone is no dialect"}\n',
    ],
)
def test_a_log_with_no_line_of_either_dialect_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(content)
    assert_one_line_error(
        *inspect(capsys, log),
        f"{log} holds no line of a Claude Code, Codex, opencode, Gemini CLI or Qwen Code stream",
    )


def test_a_forced_builtin_harness_still_needs_a_line_of_a_dialect(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"nothing here\n")
    assert_one_line_error(*inspect(capsys, log, "--harness", "claude"), "holds no line")


# As a real process


# How a session failed


def test_a_failure_no_rule_knows_is_a_plain_session_failed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(
        jsonl(type="thread.started", thread_id="t")
        + jsonl(type="turn.failed", error={"message": "something odd"})
    )
    _, out, _ = inspect(capsys, log, "--json")
    report = json.loads(out)
    assert report["failure"] == {
        "type": "SessionFailed",
        "message": "something odd",
        "retry_at": None,
        "exit_code": None,
        "signal": None,
        "session_id": "t",
    }
    assert report["usage"] is None
    _, text, _ = inspect(capsys, log)
    assert "failure:" not in text  # "failed: yes" and the error say it all
