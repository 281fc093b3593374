"""What each Harness is: its name, stop signals, skills folder and reader, the choices its helper
makes, the stderr noise it knows its CLI by, and the environment it keeps for a session."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from harness_helpers import (
    HARNESS_IDS,
    HARNESSES,
    TRANSCRIPTS,
    AnyHarness,
    every_harness,
)

import thirdshift
from thirdshift import Choice
from thirdshift._environment import session_environment
from thirdshift.errors import ConfigurationError
from thirdshift.harness import (
    ClaudeHarness,
    ClaudeReader,
    CodexHarness,
    CodexReader,
    GeminiHarness,
    GeminiReader,
    OpencodeHarness,
    OpencodeReader,
    QwenHarness,
    QwenReader,
    harness_named,
)

# What each Harness is


@pytest.mark.parametrize(
    ("harness", "stop_signals", "skills_dir", "reader_type"),
    [
        (ClaudeHarness(), (signal.SIGTERM,), ".claude/skills", ClaudeReader),
        (CodexHarness(), (signal.SIGINT, signal.SIGTERM), ".agents/skills", CodexReader),
        (OpencodeHarness(), (signal.SIGTERM,), ".opencode/skills", OpencodeReader),
        (GeminiHarness(), (signal.SIGTERM,), ".gemini/skills", GeminiReader),
        (QwenHarness(), (signal.SIGINT, signal.SIGTERM), ".qwen/skills", QwenReader),
    ],
    ids=HARNESS_IDS,
)
def test_each_harness_has_its_stop_signals_skills_folder_and_reader(
    harness: AnyHarness,
    stop_signals: tuple[signal.Signals, ...],
    skills_dir: str,
    reader_type: type[Any],
) -> None:
    assert harness.name == HARNESS_IDS[HARNESSES.index(harness)]
    assert harness.stop_signals == stop_signals
    assert harness.skills_dir == skills_dir
    assert type(harness.reader(Path("/w"))) is reader_type


@every_harness
def test_each_is_built_in_and_found_by_name(harness: AnyHarness) -> None:
    assert harness_named(harness.name) == harness
    assert thirdshift.choice(harness.name) == Choice(harness)


def test_the_helpers_make_choices_of_the_built_in_harnesses() -> None:
    choice = thirdshift.codex("gpt-5.5", "high", ["--foo", "bar"])
    assert choice == Choice(CodexHarness(), "gpt-5.5", "high", ("--foo", "bar"))
    assert thirdshift.claude() == Choice(ClaudeHarness())
    assert thirdshift.claude(extra_args=iter(["-x"])).extra_args == ("-x",)


def test_the_helpers_make_choices_of_the_three() -> None:
    assert thirdshift.opencode("openai/gpt-5", "high", ["--agent", "build"]) == Choice(
        OpencodeHarness(), "openai/gpt-5", "high", ("--agent", "build")
    )
    assert thirdshift.gemini("gemini-3.1-pro-preview", extra_args=["--debug"]) == Choice(
        GeminiHarness(), "gemini-3.1-pro-preview", None, ("--debug",)
    )
    assert thirdshift.qwen() == Choice(QwenHarness())
    assert str(thirdshift.qwen("qwen3-coder")) == "qwen · qwen3-coder · default effort"


@pytest.mark.parametrize(
    "helper",
    [thirdshift.claude, thirdshift.codex, thirdshift.opencode, thirdshift.gemini, thirdshift.qwen],
    ids=HARNESS_IDS,
)
def test_extra_args_given_as_one_string_are_refused(helper: Any) -> None:
    with pytest.raises(TypeError, match="not one string"):
        helper(extra_args="--verbose")


def test_a_choice_reads_as_harness_model_and_effort() -> None:
    assert str(thirdshift.codex(model="gpt-5.5", effort="high")) == "codex · gpt-5.5 · high"
    assert str(thirdshift.claude()) == "claude · default model · default effort"
    assert str(thirdshift.claude(model="opus")) == "claude · opus · default effort"


# What the CLIs print, and what they are given


@pytest.mark.parametrize(
    ("capture", "harness"),
    [("codex-fg-tool", CodexHarness()), ("gemini-fg", GeminiHarness()), ("qwen-fg", QwenHarness())],
    ids=["codex", "gemini", "qwen"],
)
def test_the_stderr_noise_is_every_line_a_good_run_prints(
    capture: str, harness: CodexHarness | GeminiHarness | QwenHarness
) -> None:
    stderr = (TRANSCRIPTS / capture / "stderr.txt").read_text().splitlines()
    assert stderr
    assert all(line.startswith(harness.stderr_noise) for line in stderr)


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


def test_a_choice_of_something_that_is_no_harness_is_refused_before_anything_runs() -> None:
    class HalfAHarness:
        name = "half"

    with pytest.raises(ConfigurationError, match=r"is not a Harness: it has no .*stop_signals"):
        Choice(HalfAHarness())  # type: ignore[arg-type]
