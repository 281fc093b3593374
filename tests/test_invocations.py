"""How each Harness's sessions and Resumes are invoked: exact argv, stdin, the skill sigil."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from harness_helpers import TRANSCRIPTS

import thirdshift
from thirdshift import Choice, Invocation, ThirdshiftError
from thirdshift.harness import ClaudeHarness, ClaudeReader, CodexHarness, CodexReader
from thirdshift.harness.builtin.codex import codex_prompt

PROMPT = "Fix the flaky test in tests/test_io.py, then run the suite."
SESSION = "1260b204-2d0d-4329-a0ab-79b173470dd3"
THREAD = "01a22ac8-2f15-7e40-9412-9d1a398a7bf5"

CLAUDE_TAIL = ("--output-format", "stream-json", "--verbose")
CODEX_HEAD = (
    "codex",
    "exec",
    "--json",
    "--dangerously-bypass-approvals-and-sandbox",
    "--skip-git-repo-check",
)


# What each Harness is


def test_claude_is_stopped_with_sigterm_and_finds_skills_in_dot_claude() -> None:
    harness = ClaudeHarness()
    assert harness.name == "claude"
    assert harness.stop_signals == (signal.SIGTERM,)
    assert harness.skills_dir == ".claude/skills"
    assert isinstance(harness.reader(Path("/w")), ClaudeReader)


def test_codex_is_stopped_with_sigint_first_and_finds_skills_in_dot_agents() -> None:
    harness = CodexHarness()
    assert harness.name == "codex"
    assert harness.stop_signals == (signal.SIGINT, signal.SIGTERM)
    assert harness.skills_dir == ".agents/skills"
    assert isinstance(harness.reader(Path("/w")), CodexReader)


def test_the_helpers_make_choices_of_the_built_in_harnesses() -> None:
    choice = thirdshift.codex("gpt-5.5", "high", ["--foo", "bar"])
    assert choice == Choice(CodexHarness(), "gpt-5.5", "high", ("--foo", "bar"))
    assert thirdshift.claude() == Choice(ClaudeHarness())
    assert thirdshift.claude(extra_args=iter(["-x"])).extra_args == ("-x",)


def test_extra_args_given_as_one_string_are_refused() -> None:
    with pytest.raises(TypeError, match="not one string"):
        thirdshift.claude(extra_args="--verbose")


def test_a_choice_reads_as_harness_model_and_effort() -> None:
    assert str(thirdshift.codex(model="gpt-5.5", effort="high")) == "codex · gpt-5.5 · high"
    assert str(thirdshift.claude()) == "claude · default model · default effort"
    assert str(thirdshift.claude(model="opus")) == "claude · opus · default effort"


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


def test_claude_prompts_keep_their_slash_and_skills_change_nothing() -> None:
    invocation = ClaudeHarness().invocation(thirdshift.claude(), None, "/review it", ("review",))
    assert invocation.stdin == "/review it"
    assert invocation.argv == ClaudeHarness().invocation(thirdshift.claude(), None, "x").argv


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


@pytest.mark.parametrize("harness", [ClaudeHarness(), CodexHarness()], ids=["claude", "codex"])
def test_an_empty_model_or_effort_is_the_default(harness: ClaudeHarness | CodexHarness) -> None:
    plain = harness.invocation(Choice(harness), None, PROMPT)
    assert harness.invocation(Choice(harness, model="", effort=""), None, PROMPT) == plain


# The prompt goes to stdin only


@pytest.mark.parametrize("harness", [ClaudeHarness(), CodexHarness()], ids=["claude", "codex"])
@pytest.mark.parametrize("resume", [None, SESSION])
def test_the_prompt_is_never_in_argv(
    harness: ClaudeHarness | CodexHarness, resume: str | None
) -> None:
    prompt = "x" * 200_000  # more than fits in one argv string (128 KiB)
    invocation = harness.invocation(Choice(harness, "m", "e", ("--a",)), resume, prompt)
    assert invocation.stdin == prompt
    assert all(len(arg) < 100 for arg in invocation.argv)


# Hostile session ids


HOSTILE = [
    "--dangerously-skip-permissions",
    "-x",
    "../../x",
    "a/b",
    "",
    "a b",
    "id\n--verbose",
    "id;rm -rf /",
    ".hidden",
    "_x",
    "\uff49\uff44",  # fullwidth "id": not [A-Za-z0-9]
]


@pytest.mark.parametrize("harness", [ClaudeHarness(), CodexHarness()], ids=["claude", "codex"])
@pytest.mark.parametrize("session_id", HOSTILE)
def test_a_hostile_session_id_is_refused(
    harness: ClaudeHarness | CodexHarness, session_id: str
) -> None:
    with pytest.raises(ThirdshiftError, match="refusing to resume session id"):
        harness.invocation(Choice(harness), session_id, PROMPT)


@pytest.mark.parametrize("harness", [ClaudeHarness(), CodexHarness()], ids=["claude", "codex"])
@pytest.mark.parametrize("session_id", [SESSION, THREAD, "a", "7", "a.b_c:d-e"])
def test_a_plain_session_id_is_passed_as_it_is(
    harness: ClaudeHarness | CodexHarness, session_id: str
) -> None:
    assert session_id in harness.invocation(Choice(harness), session_id, PROMPT).argv


# The skill sigil


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


def test_codex_names_the_stderr_lines_it_prints_on_every_run() -> None:
    noise = CodexHarness.stderr_noise
    stderr = (TRANSCRIPTS / "codex-fg-tool" / "stderr.txt").read_text().splitlines()

    assert stderr
    assert all(line.startswith(noise) for line in stderr)


def test_a_session_id_longer_than_any_real_one_is_refused_and_shown_short() -> None:
    longest = "a" * 256

    assert ClaudeHarness().invocation(Choice(ClaudeHarness()), longest, "p").argv[-1] == longest
    with pytest.raises(ThirdshiftError) as raised:
        CodexHarness().invocation(Choice(CodexHarness()), longest + "a", "p")
    assert str(raised.value) == f"refusing to resume session id '{'a' * 100}…': not a plain id"
