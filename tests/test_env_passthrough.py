"""What ``minimal`` passes on to each Harness's CLI (#15.10): the CLI's own ways to sign in, and
docs/security.md saying exactly that, Harness by Harness."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import thirdshift
from thirdshift._environment import MINIMAL_VARIABLES, session_environment
from thirdshift.harness import harness_named, harness_names

SECURITY = Path(__file__).resolve().parent.parent / "docs" / "security.md"
BUILTIN = ("claude", "codex", "opencode", "gemini", "qwen")

# How each CLI (at the version pinned in clis/) signs in from its environment, read in its code:
# every one of these must reach it under `minimal`.
SIGN_IN = {
    "claude": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
    "codex": ("OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_HOME"),
    # Its providers' keys as its models catalogue names them; `opencode auth login` keeps the
    # keys in $XDG_DATA_HOME/opencode/auth.json.
    "opencode": (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GENERATIVE_AI_API_KEY",
        "OPENROUTER_API_KEY",
        "OPENCODE_API_KEY",
        "XDG_DATA_HOME",
    ),
    # getAuthTypeFromEnv: GOOGLE_GENAI_USE_GCA (with GOOGLE_CLOUD_ACCESS_TOKEN),
    # GOOGLE_GENAI_USE_VERTEXAI, GEMINI_API_KEY, GEMINI_CLI_USE_COMPUTE_ADC; its cached Google
    # sign-in lives under $GEMINI_CLI_HOME/.gemini.
    "gemini": (
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_GENAI_USE_GCA",
        "GOOGLE_CLOUD_ACCESS_TOKEN",
        "GEMINI_CLI_USE_COMPUTE_ADC",
        "GEMINI_CLI_HOME",
    ),
    # AUTH_ENV_MAPPINGS: openai, anthropic, gemini and vertex-ai (the Google SDK's project,
    # location and credentials file); DASHSCOPE_API_KEY for its image and audio tools.
    "qwen": (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "DASHSCOPE_API_KEY",
    ),
}


def test_every_builtin_harness_is_checked() -> None:
    assert set(BUILTIN) <= set(harness_names())
    assert set(SIGN_IN) == set(BUILTIN)


@pytest.mark.parametrize("name", BUILTIN)
def test_minimal_passes_on_every_variable_the_cli_signs_in_with(name: str) -> None:
    orchestrator = {variable: f"value of {variable}" for variable in SIGN_IN[name]}
    orchestrator |= {"GITHUB_TOKEN": "ghp_secret", "HOME": "/home/factory"}
    choice = thirdshift.Choice(harness_named(name), env_policy="minimal")

    env = session_environment(choice, orchestrator)

    assert env == {k: v for k, v in orchestrator.items() if k != "GITHUB_TOKEN"}


def _documented_basics() -> set[str]:
    text = " ".join(SECURITY.read_text().split())
    sentence = re.search(r"start the CLI with only (.*?) of your environment", text)
    assert sentence, "docs/security.md no longer says what minimal keeps of your environment"
    return set(re.findall(r"`([A-Z_*]+)`", sentence[1]))


def _documented_passthrough() -> dict[str, set[str]]:
    rows = re.findall(r"^\s*\| (\w+) \| (.*) \|\s*$", SECURITY.read_text(), re.MULTILINE)
    return {name: set(re.findall(r"`([A-Z0-9_]+)`", names)) for name, names in rows}


def test_the_security_doc_names_what_minimal_keeps_of_your_environment() -> None:
    assert _documented_basics() == {*MINIMAL_VARIABLES, "LC_*"}


@pytest.mark.parametrize("name", BUILTIN)
def test_the_security_doc_names_each_harness_s_own_variables(name: str) -> None:
    documented = _documented_passthrough()

    assert name in documented, f"docs/security.md has no row for {name}"
    assert documented[name] == set(harness_named(name).env_passthrough)
