"""How to install each real CLI the fake model speaks to, for the errors that say it is missing."""

from __future__ import annotations

NPM_PACKAGES = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "opencode": "opencode-ai",
    "gemini": "@google/gemini-cli",
    "qwen": "@qwen-code/qwen-code",
}


# The versions thirdshift is checked against: the ones pinned in the repository's clis/ (a test
# holds the two together). A plain ``npm install -g`` would bring the latest, which no test ran.
PINNED_VERSIONS = {
    "claude": "2.1.197",
    "codex": "0.171.0",
    "opencode": "1.18.33",
    "gemini": "0.61.0",
    "qwen": "0.24.4",
}


def install_command(cli: str) -> str:
    """``npm install -g @anthropic-ai/claude-code@2.1.197`` for ``claude``, and so on."""
    return f"npm install -g {NPM_PACKAGES[cli]}@{PINNED_VERSIONS[cli]}"
