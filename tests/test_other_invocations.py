"""How opencode, Gemini CLI and Qwen Code sessions and Resumes are invoked, checked against the
argv of the real captures, and what each of the three Harnesses is."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from harness_helpers import TRANSCRIPTS

import thirdshift
from thirdshift import Choice, Invocation, ThirdshiftError
from thirdshift.environment import session_environment
from thirdshift.harness import (
    GeminiHarness,
    GeminiReader,
    OpencodeHarness,
    OpencodeReader,
    QwenHarness,
    QwenReader,
    harness_named,
)

PROMPT = "Fix the flaky test in tests/test_io.py, then run the suite."
HARNESSES = [OpencodeHarness(), GeminiHarness(), QwenHarness()]
IDS = ["opencode", "gemini", "qwen"]
AnyHarness = OpencodeHarness | GeminiHarness | QwenHarness


def argv_of(capture: str) -> tuple[str, ...]:
    recorded: dict[str, Any] = json.loads((TRANSCRIPTS / capture / "argv.json").read_text())
    return tuple(recorded["argv"])


# What each Harness is


def test_opencode_is_stopped_with_sigterm_and_finds_skills_in_dot_opencode() -> None:
    harness = OpencodeHarness()
    assert harness.name == "opencode"
    assert harness.stop_signals == (signal.SIGTERM,)
    assert harness.skills_dir == ".opencode/skills"
    assert isinstance(harness.reader(Path("/w")), OpencodeReader)


def test_gemini_is_stopped_with_sigterm_and_finds_skills_in_dot_gemini() -> None:
    harness = GeminiHarness()
    assert harness.name == "gemini"
    assert harness.stop_signals == (signal.SIGTERM,)
    assert harness.skills_dir == ".gemini/skills"
    assert isinstance(harness.reader(Path("/w")), GeminiReader)


def test_qwen_is_stopped_with_sigint_first_and_finds_skills_in_dot_qwen() -> None:
    harness = QwenHarness()
    assert harness.name == "qwen"
    assert harness.stop_signals == (signal.SIGINT, signal.SIGTERM)
    assert harness.skills_dir == ".qwen/skills"
    assert isinstance(harness.reader(Path("/w")), QwenReader)


@pytest.mark.parametrize("harness", HARNESSES, ids=IDS)
def test_each_is_built_in_and_found_by_name(harness: AnyHarness) -> None:
    assert harness_named(harness.name) == harness
    assert thirdshift.choice(harness.name) == Choice(harness)


def test_the_helpers_make_choices_of_the_three() -> None:
    assert thirdshift.opencode("openai/gpt-5", "high", ["--agent", "build"]) == Choice(
        OpencodeHarness(), "openai/gpt-5", "high", ("--agent", "build")
    )
    assert thirdshift.gemini("gemini-3.1-pro-preview", extra_args=["--debug"]) == Choice(
        GeminiHarness(), "gemini-3.1-pro-preview", None, ("--debug",)
    )
    assert thirdshift.qwen() == Choice(QwenHarness())
    assert str(thirdshift.qwen("qwen3-coder")) == "qwen · qwen3-coder · default effort"


def test_extra_args_given_as_one_string_are_refused() -> None:
    with pytest.raises(TypeError, match="not one string"):
        thirdshift.gemini(extra_args="--debug")


# opencode


def test_a_fresh_opencode_session_is_the_captured_argv_less_its_positional_message() -> None:
    captured = argv_of("opencode-hello")
    assert captured[-1] == "say hello"  # a positional message reaches the model quoted
    invocation = OpencodeHarness().invocation(thirdshift.opencode(), None, PROMPT)
    assert invocation == Invocation(argv=captured[:-1], stdin=PROMPT)
    assert invocation.argv == ("opencode", "run", "--format", "json", "--auto")


def test_an_opencode_resume_is_the_captured_one() -> None:
    captured = argv_of("opencode-resume-stdin")
    session = captured[-1]
    invocation = OpencodeHarness().invocation(thirdshift.opencode(), session, "continue")
    assert invocation == Invocation(argv=captured, stdin="continue")
    assert invocation.argv[-2:] == ("-s", "ses_dd02063a2ffexibETwonf7yD0T")


def test_an_opencode_session_with_model_variant_and_extra_args() -> None:
    choice = thirdshift.opencode("anthropic/claude-sonnet-4-5", "high", ("--agent", "build"))
    fresh = OpencodeHarness().invocation(choice, None, PROMPT)
    assert fresh.argv == (
        "opencode",
        "run",
        "--format",
        "json",
        "--auto",
        "-m",
        "anthropic/claude-sonnet-4-5",
        "--variant",
        "high",
        "--agent",
        "build",
    )
    resume = OpencodeHarness().invocation(choice, "ses_1", "carry on")
    assert resume == Invocation(argv=(*fresh.argv, "-s", "ses_1"), stdin="carry on")


@pytest.mark.parametrize("model", ["gpt-5", "/gpt-5", "openai/", "/"])
def test_an_opencode_model_that_is_not_provider_slash_model_is_refused_in_one_line(
    model: str,
) -> None:
    with pytest.raises(ThirdshiftError) as raised:
        OpencodeHarness().invocation(thirdshift.opencode(model), None, PROMPT)
    assert str(raised.value) == (
        "opencode names a model as provider/model (e.g. anthropic/claude-sonnet-4-5), "
        f"not {model!r}"
    )


# Gemini CLI


def test_a_fresh_gemini_session_is_the_captured_argv_less_its_p_flag() -> None:
    captured = argv_of("gemini-hello")
    assert captured[1:3] == ("-p", "say hello")  # -p text would be appended to stdin
    invocation = GeminiHarness().invocation(thirdshift.gemini(), None, PROMPT)
    assert invocation == Invocation(argv=(captured[0], *captured[3:]), stdin=PROMPT)
    assert invocation.argv == ("gemini", "-o", "stream-json", "-y")


def test_a_gemini_resume_is_the_captured_one() -> None:
    captured = argv_of("gemini-resume-stdin")
    session = captured[-1]
    invocation = GeminiHarness().invocation(thirdshift.gemini(), session, "continue please\n")
    assert invocation == Invocation(argv=captured, stdin="continue please\n")


def test_a_gemini_session_with_a_model_and_extra_args() -> None:
    choice = thirdshift.gemini("gemini-3.1-pro-preview", extra_args=("--debug",))
    fresh = GeminiHarness().invocation(choice, None, PROMPT)
    assert fresh.argv == (
        "gemini",
        "-o",
        "stream-json",
        "-y",
        "-m",
        "gemini-3.1-pro-preview",
        "--debug",
    )
    resume = GeminiHarness().invocation(choice, "4da9c8bc", "carry on")
    assert resume.argv == (*fresh.argv, "-r", "4da9c8bc")


# Qwen Code


def test_a_fresh_qwen_session_is_the_captured_argv_less_its_prompt_and_auth_type() -> None:
    captured = argv_of("qwen-hello")
    assert captured[-1] == "say hello"
    # The capture chose its auth type on the command line; the Harness leaves that to Qwen's
    # settings, or to extra_args.
    assert captured[3:5] == ("--auth-type", "openai")
    invocation = QwenHarness().invocation(thirdshift.qwen(), None, PROMPT)
    assert invocation == Invocation(argv=(*captured[:3], *captured[5:-1]), stdin=PROMPT)
    assert invocation.argv == ("qwen", "-o", "stream-json", "-y")


def test_a_qwen_resume_is_the_captured_one_with_its_auth_type_as_extra_args() -> None:
    captured = argv_of("qwen-resume-stdin")
    session = captured[-1]
    choice = thirdshift.qwen(extra_args=("--auth-type", "openai"))
    invocation = QwenHarness().invocation(choice, session, "continue")
    assert invocation.stdin == "continue"
    # the same words; the capture put --auth-type before -y, which qwen reads either way
    assert invocation.argv == (
        "qwen",
        "-o",
        "stream-json",
        "-y",
        "--auth-type",
        "openai",
        "-r",
        session,
    )
    assert sorted(invocation.argv) == sorted(captured)


def test_a_qwen_session_with_a_model() -> None:
    invocation = QwenHarness().invocation(thirdshift.qwen("qwen3-coder-plus"), "c7", PROMPT)
    assert invocation.argv == (
        "qwen",
        "-o",
        "stream-json",
        "-y",
        "-m",
        "qwen3-coder-plus",
        "-r",
        "c7",
    )


# All three


@pytest.mark.parametrize("harness", [GeminiHarness(), QwenHarness()], ids=["gemini", "qwen"])
def test_an_effort_is_refused_in_one_line_where_the_cli_has_none(
    harness: GeminiHarness | QwenHarness,
) -> None:
    with pytest.raises(ThirdshiftError) as raised:
        harness.invocation(thirdshift.choice(harness.name, effort="high"), None, PROMPT)
    expected = f"{harness.name} has no effort setting: leave the effort out (got 'high')"
    assert str(raised.value) == expected


@pytest.mark.parametrize("harness", HARNESSES, ids=IDS)
def test_an_empty_model_or_effort_is_the_default(harness: AnyHarness) -> None:
    plain = harness.invocation(Choice(harness), None, PROMPT)
    assert harness.invocation(Choice(harness, model="", effort=""), None, PROMPT) == plain


@pytest.mark.parametrize("harness", HARNESSES, ids=IDS)
@pytest.mark.parametrize("resume", [None, "ses_dd02063a2ffexibETwonf7yD0T"])
def test_the_prompt_is_never_in_argv(harness: AnyHarness, resume: str | None) -> None:
    prompt = "x" * 200_000  # more than fits in one argv string (128 KiB)
    model = "p/m" if harness.name == "opencode" else "m"
    invocation = harness.invocation(Choice(harness, model, None, ("--a",)), resume, prompt)
    assert invocation.stdin == prompt
    assert all(len(arg) < 100 for arg in invocation.argv)


@pytest.mark.parametrize("harness", HARNESSES, ids=IDS)
def test_a_prompt_is_passed_on_as_written_whatever_skills_there_are(harness: AnyHarness) -> None:
    """None of the three takes a sigil for a skill: each offers its skills to the model."""
    invocation = harness.invocation(Choice(harness), None, "/review the diff", ("review",))
    assert invocation.stdin == "/review the diff"
    assert invocation.argv == harness.invocation(Choice(harness), None, "x").argv


HOSTILE = ["--yolo", "-x", "../../x", "a/b", "", "a b", "id\n-y", "id;rm -rf /", ".hidden"]


@pytest.mark.parametrize("harness", HARNESSES, ids=IDS)
@pytest.mark.parametrize("session_id", HOSTILE)
def test_a_hostile_session_id_is_refused(harness: AnyHarness, session_id: str) -> None:
    with pytest.raises(ThirdshiftError, match="refusing to resume session id"):
        harness.invocation(Choice(harness), session_id, PROMPT)


@pytest.mark.parametrize(
    ("capture", "harness"),
    [("gemini-fg", GeminiHarness()), ("qwen-fg", QwenHarness())],
    ids=["gemini", "qwen"],
)
def test_the_stderr_noise_is_every_line_a_good_run_prints(
    capture: str, harness: GeminiHarness | QwenHarness
) -> None:
    stderr = (TRANSCRIPTS / capture / "stderr.txt").read_text().splitlines()
    assert stderr
    assert all(line.strip().startswith(harness.stderr_noise) for line in stderr)


@pytest.mark.parametrize(
    "capture", ["opencode-fg", "gemini-fg", "qwen-fg"], ids=["opencode", "gemini", "qwen"]
)
def test_the_minimal_environment_keeps_what_the_capture_ran_with(capture: str) -> None:
    """Every variable the capture set, but the proxies of its test rig and the keys a config
    file names for opencode (MOCK_*, which a Choice's env passes on)."""
    recorded: dict[str, Any] = json.loads((TRANSCRIPTS / capture / "argv.json").read_text())
    harness = harness_named(capture.split("-", maxsplit=1)[0])
    rig = {"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "NO_PROXY", "no_proxy"}
    wanted = {name for name in recorded["env"] if name not in rig and not name.startswith("MOCK_")}
    everything = {name: "x" for name in [*recorded["env"], "UNRELATED_SECRET"]}

    kept = session_environment(Choice(harness, env_policy="minimal"), everything)

    assert wanted <= set(kept)
    assert "UNRELATED_SECRET" not in kept
