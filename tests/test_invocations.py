"""How each Harness's sessions and Resumes are invoked: exact argv (checked against the argv of
the real captures where there is one), stdin, and the skill sigil.

What each Harness is: test_harnesses.py; the session ids a Resume takes: test_session_ids.py."""

from __future__ import annotations

import pytest
from harness_helpers import (
    HARNESS_IDS,
    HARNESSES,
    OPENCODE_SESSION,
    PROMPT,
    SESSION,
    THREAD,
    AnyHarness,
    argv_of,
    every_harness,
)

import thirdshift
from thirdshift import Choice, ThirdshiftError
from thirdshift.harness import (
    ClaudeHarness,
    CodexHarness,
    GeminiHarness,
    Invocation,
    OpencodeHarness,
    QwenHarness,
)
from thirdshift.harness._builtin.codex import codex_prompt

CLAUDE_TAIL = ("--output-format", "stream-json", "--verbose")
CODEX_HEAD = (
    "codex",
    "exec",
    "--json",
    "--dangerously-bypass-approvals-and-sandbox",
    "--skip-git-repo-check",
)


# Claude


def test_a_fresh_claude_session() -> None:
    invocation = ClaudeHarness().invocation(thirdshift.claude(), None, PROMPT)
    assert invocation == Invocation(
        argv=("claude", "-p", "--permission-mode", "auto", *CLAUDE_TAIL), stdin=PROMPT
    )


def test_a_fresh_claude_session_with_model_effort_and_extra_args() -> None:
    choice = thirdshift.claude("opus", "high", ("--add-dir", "/data"))
    invocation = ClaudeHarness().invocation(choice, None, PROMPT)
    assert invocation.argv == (
        "claude",
        "-p",
        "--permission-mode",
        "auto",
        "--model",
        "opus",
        "--effort",
        "high",
        "--add-dir",
        "/data",
        *CLAUDE_TAIL,
    )
    assert invocation.stdin == PROMPT


def test_a_claude_session_with_only_an_effort() -> None:
    invocation = ClaudeHarness().invocation(thirdshift.claude(effort="low"), None, PROMPT)
    assert invocation.argv == (
        "claude",
        "-p",
        "--permission-mode",
        "auto",
        "--effort",
        "low",
        *CLAUDE_TAIL,
    )


def test_a_claude_resume_repeats_every_flag_and_adds_resume_last() -> None:
    choice = thirdshift.claude("opus", "high", ("--add-dir", "/data"))
    fresh = ClaudeHarness().invocation(choice, None, PROMPT)
    resume = ClaudeHarness().invocation(choice, SESSION, "carry on")
    assert resume == Invocation(argv=(*fresh.argv, "--resume", SESSION), stdin="carry on")


def test_a_plain_claude_resume() -> None:
    invocation = ClaudeHarness().invocation(thirdshift.claude(), SESSION, PROMPT)
    assert invocation.argv == (
        "claude",
        "-p",
        "--permission-mode",
        "auto",
        *CLAUDE_TAIL,
        "--resume",
        SESSION,
    )


# Codex


def test_a_fresh_codex_session() -> None:
    invocation = CodexHarness().invocation(thirdshift.codex(), None, PROMPT)
    assert invocation == Invocation(argv=(*CODEX_HEAD, "-"), stdin=PROMPT)


def test_a_fresh_codex_session_with_model_effort_and_extra_args() -> None:
    choice = thirdshift.codex("gpt-5.5", "high", ("-c", "foo=1"))
    invocation = CodexHarness().invocation(choice, None, PROMPT)
    assert invocation.argv == (
        *CODEX_HEAD,
        "-m",
        "gpt-5.5",
        "-c",
        'model_reasoning_effort="high"',
        "-c",
        "foo=1",
        "-",
    )
    assert invocation.stdin == PROMPT


def test_a_codex_session_with_only_a_model() -> None:
    invocation = CodexHarness().invocation(thirdshift.codex(model="o4"), None, PROMPT)
    assert invocation.argv == (*CODEX_HEAD, "-m", "o4", "-")


def test_a_codex_effort_cannot_break_out_of_its_toml_string() -> None:
    invocation = CodexHarness().invocation(thirdshift.codex(effort='high"\nx="y'), None, PROMPT)
    assert invocation.argv == (*CODEX_HEAD, "-c", 'model_reasoning_effort="high\\"\\nx=\\"y"', "-")


def test_a_codex_resume_repeats_every_flag_and_puts_resume_after_them() -> None:
    choice = thirdshift.codex("gpt-5.5", "high", ("--add-dir", "/data"))
    fresh = CodexHarness().invocation(choice, None, PROMPT)
    resume = CodexHarness().invocation(choice, THREAD, "carry on")
    assert resume.argv == (*fresh.argv[:-1], "resume", THREAD, "-")
    assert resume.argv == (
        *CODEX_HEAD,
        "-m",
        "gpt-5.5",
        "-c",
        'model_reasoning_effort="high"',
        "--add-dir",
        "/data",
        "resume",
        THREAD,
        "-",
    )
    assert resume.stdin == "carry on"


def test_a_plain_codex_resume() -> None:
    invocation = CodexHarness().invocation(thirdshift.codex(), THREAD, PROMPT)
    assert invocation.argv == (*CODEX_HEAD, "resume", THREAD, "-")


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


# All five


@pytest.mark.parametrize("harness", [GeminiHarness(), QwenHarness()], ids=["gemini", "qwen"])
def test_an_effort_is_refused_in_one_line_where_the_cli_has_none(
    harness: GeminiHarness | QwenHarness,
) -> None:
    with pytest.raises(ThirdshiftError) as raised:
        harness.invocation(thirdshift.choice(harness.name, effort="high"), None, PROMPT)
    expected = f"{harness.name} has no effort setting: leave the effort out (got 'high')"
    assert str(raised.value) == expected


@every_harness
def test_an_empty_model_or_effort_is_the_default(harness: AnyHarness) -> None:
    plain = harness.invocation(Choice(harness), None, PROMPT)
    assert harness.invocation(Choice(harness, model="", effort=""), None, PROMPT) == plain


@every_harness
@pytest.mark.parametrize("resumed", [False, True], ids=["fresh", "resume"])
def test_the_prompt_is_never_in_argv(harness: AnyHarness, resumed: bool) -> None:
    prompt = "x" * 200_000  # more than fits in one argv string (128 KiB)
    model = "p/m" if harness.name == "opencode" else "m"
    effort = "e" if harness.name in ("claude", "codex") else None
    resume = (OPENCODE_SESSION if harness.name == "opencode" else SESSION) if resumed else None
    invocation = harness.invocation(Choice(harness, model, effort, ("--a",)), resume, prompt)
    assert invocation.stdin == prompt
    assert all(len(arg) < 100 for arg in invocation.argv)


# Prompts and skills


@pytest.mark.parametrize(
    "harness",
    [h for h in HARNESSES if h.name != "codex"],
    ids=[i for i in HARNESS_IDS if i != "codex"],
)
def test_a_prompt_is_passed_on_as_written_whatever_skills_there_are(harness: AnyHarness) -> None:
    """Only Codex takes a sigil for a skill: the others keep the slash, or offer their skills
    to the model."""
    invocation = harness.invocation(Choice(harness), None, "/review the diff", ("review",))
    assert invocation.stdin == "/review the diff"
    assert invocation.argv == harness.invocation(Choice(harness), None, "x").argv


@pytest.mark.parametrize(
    ("prompt", "sent"),
    [
        ("/review the diff", "$review the diff"),
        ("/review", "$review"),
        ("/review\nthe diff", "$review\nthe diff"),
        ("/review\tthe diff", "$review\tthe diff"),
        ("/ship-it now /review", "$ship-it now /review"),
    ],
)
def test_codex_gets_a_dollar_for_a_leading_slash_skill_it_was_given(prompt: str, sent: str) -> None:
    invocation = CodexHarness().invocation(
        thirdshift.codex(), None, prompt, skills=("review", "ship-it")
    )
    assert invocation.stdin == sent


@pytest.mark.parametrize(
    "prompt",
    [
        "/etc/hosts looks wrong",
        "/reviewer please",  # not the skill `review`
        "/deploy now",  # a skill not linked for this session
        " /review with a leading space",
        "please /review",
        "first line\n/review",
        "//review",
        "/",
        "",
    ],
)
def test_codex_leaves_every_other_prompt_unchanged(prompt: str) -> None:
    invocation = CodexHarness().invocation(thirdshift.codex(), None, prompt, ("review", "etc"))
    assert invocation.stdin == prompt


def test_codex_rewrites_nothing_without_skills() -> None:
    assert CodexHarness().invocation(thirdshift.codex(), None, "/review").stdin == "/review"


def test_skills_given_as_one_string_are_refused() -> None:
    with pytest.raises(TypeError, match="not one string"):
        codex_prompt("/review", "review")
