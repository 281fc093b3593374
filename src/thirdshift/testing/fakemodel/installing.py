"""How to install each real CLI the fake model speaks to, for the errors that say it is missing."""

from __future__ import annotations

NPM_PACKAGES = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "opencode": "opencode-ai",
    "gemini": "@google/gemini-cli",
    "qwen": "@qwen-code/qwen-code",
}


def install_command(cli: str) -> str:
    """``npm install -g @anthropic-ai/claude-code`` for ``claude``, and so on."""
    return f"npm install -g {NPM_PACKAGES[cli]}"
