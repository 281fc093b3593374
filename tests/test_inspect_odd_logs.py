"""``thirdshift inspect`` on logs that are odd or huge: bytes that are not UTF-8, surrogates,
long lines, more progress than is kept, and a child's peak memory whatever a line holds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from harness_helpers import inspect, jsonl, stdout_of

from thirdshift._cli.inspect import MAX_PROGRESS_KEPT
from thirdshift._machine.follow import MAX_PARSED_LINE

# Lenient decoding


def test_bytes_that_are_not_utf8_are_read_leniently(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(
        b"\xff\xfe binary noise\n"
        + stdout_of("claude-bg-skipperms").read_bytes().replace(b"sleep 300", b"sleep \xff300")
    )
    code, out, _ = inspect(capsys, log, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["progress"] == ["session started", "$ sleep \ufffd300"]
    assert report["killed"] == ["Sleep for five minutes in the background"]


def test_a_lone_surrogate_in_the_stream_is_printed_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"type": "system", "subtype": "init", "session_id": "s"}\n'
        '{"type": "result", "subtype": "success", "result": "bad \\ud800 text"}\n'
    )
    code, out, _ = inspect(capsys, log)
    assert code == 0
    assert "  bad \\ud800 text\n" in out


def test_json_is_printable_ascii_whatever_the_stream_holds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hostile = "\\u001b[2J \\u009b31m \\u007f \\u202e \\u2028 caf\\u00e9 \\ud800"
    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"type": "system", "subtype": "init", "session_id": "s"}\n'
        f'{{"type": "result", "subtype": "success", "result": "{hostile}"}}\n'
    )
    code, out, _ = inspect(capsys, log, "--json")
    assert code == 0
    assert out.endswith("\n")
    assert all(" " <= character <= "~" for character in out[:-1]), out
    assert json.loads(out)["final_message"] == json.loads(f'"{hostile}"')


def test_a_long_line_and_a_missing_final_newline_are_fine(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    command = "x" * (MAX_PARSED_LINE - 1000)
    log.write_text(
        jsonl(type="thread.started", thread_id="t")
        + jsonl(
            type="item.started", item={"id": "i", "type": "command_execution", "command": command}
        )
        + '{"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 2}}'
    )
    code, out, _ = inspect(capsys, log, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["progress"] == ["session started", "$ " + "x" * 100 + "…"]
    assert report["summary"] == "1 input tokens (0 cached), 2 output tokens"


def test_a_line_over_the_parse_cap_is_left_out_as_the_live_follow_leaves_it_out(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    command = "x" * (MAX_PARSED_LINE + 1)
    log.write_text(
        jsonl(type="thread.started", thread_id="t")
        + jsonl(
            type="item.started", item={"id": "i", "type": "command_execution", "command": command}
        )
        + jsonl(type="turn.completed", usage={"input_tokens": 1, "output_tokens": 2})
    )
    code, out, _ = inspect(capsys, log, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["progress"] == ["session started"]  # the session's reader never saw the rest
    assert report["summary"] == "1 input tokens (0 cached), 2 output tokens"


def tool_calls(count: int) -> str:
    """A Claude stream of ``count`` Bash tool calls, each its progress line ``$ echo <n>``."""
    return jsonl(type="system", subtype="init", session_id="s") + "".join(
        jsonl(
            type="assistant",
            message={
                "content": [{"type": "tool_use", "name": "Bash", "input": {"command": f"echo {n}"}}]
            },
        )
        for n in range(count)
    )


def test_json_keeps_the_first_progress_lines_and_counts_the_rest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(tool_calls(MAX_PROGRESS_KEPT + 5))

    code, out, _ = inspect(capsys, log, "--json")

    assert code == 0
    report = json.loads(out)
    expected = ["session started", *[f"$ echo {n}" for n in range(MAX_PROGRESS_KEPT - 1)]]
    assert report["progress"] == expected
    assert report["progress_not_kept"] == 6


def test_text_prints_every_progress_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(tool_calls(MAX_PROGRESS_KEPT + 5))

    code, out, _ = inspect(capsys, log)

    assert code == 0
    lines = out.splitlines()
    assert lines[: MAX_PROGRESS_KEPT + 7] == [
        "session started",
        *[f"$ echo {n}" for n in range(MAX_PROGRESS_KEPT + 5)],
        "",
    ]


# Memory: a child's peak RSS, whatever the log holds

PEAK_RSS = """
import resource, subprocess, sys
done = subprocess.run(
    [sys.executable, "-m", "thirdshift._cli", "inspect", *sys.argv[1:]],
    stdout=subprocess.DEVNULL,
    stderr=subprocess.PIPE,
    check=False,
)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def inspect_peak_rss_mb(*args: str | Path) -> float:
    """``thirdshift inspect ARGS``'s peak RSS in MB, measured by a parent of its own (so that
    no other child of this test process counts); the command must succeed."""
    done = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, *map(str, args)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    code, peak_kb = done.stdout.split()
    assert code == "0", done.stdout
    return int(peak_kb) / 1024


def write_event(log: Path, event: str, filler: str, size: int) -> None:
    """A Claude init, then ``event`` with its ``@@`` made ``size`` bytes of ``filler`` repeated,
    written a MiB at a time (never whole in this process)."""
    head, tail = event.split("@@")
    block = filler * ((1 << 20) // len(filler))
    with log.open("w") as out:
        out.write(jsonl(type="system", subtype="init", session_id="s"))
        out.write(head)
        for _ in range(size // len(block)):
            out.write(block)
        out.write(filler * ((size % len(block)) // len(filler)))
        out.write(tail + "\n")


HUGE_LINES = {
    "a 256 MB line": (
        '{"type":"assistant","message":{"content":[{"type":"text","text":"@@"}]}}',
        "x",
        256_000_000,
    ),
    "a 32 MiB result line": ('{"type":"result","subtype":"success","result":"@@"}', "x", 32 << 20),
    # Within the parse cap, but it would take over 100 MB parsed: each {} a dict of its own.
    "a 4 MiB line of {},{},...": (
        '{"type":"result","subtype":"success","result":"ok","x":[@@{}]}',
        "{},",
        MAX_PARSED_LINE - 100,
    ),
}


@pytest.mark.parametrize("output", [[], ["--json"]], ids=["text", "json"])
@pytest.mark.parametrize("shape", sorted(HUGE_LINES))
def test_peak_memory_stays_under_100_mb_whatever_the_line(
    tmp_path: Path, shape: str, output: list[str]
) -> None:
    log = tmp_path / "log.jsonl"
    write_event(log, *HUGE_LINES[shape])
    try:
        assert inspect_peak_rss_mb(log, *output) < 100
    finally:
        log.unlink()
