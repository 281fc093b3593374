"""What points opencode, Gemini CLI and Qwen Code at the fake model: files under HOME, variables.

Each CLI reads its settings from its own folder under ``HOME`` (opencode ``.config/opencode``,
Gemini CLI ``.gemini``, Qwen Code ``.qwen``), so the files are written under the isolated home
the caller gives, never the operator's. What each needs was observed with the pinned versions
(see ``../shared/OTHER-CLIS.md`` in the project's notes):

- opencode: a provider of its own for the OpenAI-compatible API, as the default and the small
  model (titles), with auto-update, sharing, the models.dev fetch and LSP downloads off.
- Gemini CLI: the API-key auth type chosen in its settings (without it a base URL selects the
  "gateway" auth type, which headless runs refuse: exit 41), telemetry and updates off, no
  folder-trust prompt, and one process (no relaunched child).
- Qwen Code: the OpenAI auth type, its base URL, key and model from the environment.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from thirdshift.testing._wire import OPENCODE_API

OPENCODE_PROVIDER = "thirdshift-fake"
CHAT_MODEL = "mock-model"

REMOVED = (
    "DASHSCOPE_API_KEY",
    "GEMINI_CLI_HOME",
    "GEMINI_MODEL",
    "GOOGLE_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "OPENAI_MODEL",
    "OPENCODE_CONFIG",
    "OPENCODE_CONFIG_CONTENT",
    "OPENCODE_CONFIG_DIR",
    "QWEN_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
)
"""What could hand these CLIs real credentials, another endpoint or another home."""


def opencode_config(url: str, key: str) -> dict[str, Any]:
    model = f"{OPENCODE_PROVIDER}/{CHAT_MODEL}"
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            OPENCODE_PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "thirdshift fake model",
                "options": {"baseURL": f"{url}{OPENCODE_API}", "apiKey": key},
                "models": {CHAT_MODEL: {"name": "fake model", "tool_call": True}},
            }
        },
        "model": model,
        "small_model": model,
        "autoupdate": False,
        "share": "disabled",
    }


def gemini_settings() -> dict[str, Any]:
    return {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    }


def qwen_settings() -> dict[str, Any]:
    return {
        "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "$version": 4,
    }


def _write(path: Path, settings: dict[str, Any]) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")


def more_clis_env(url: str, home: Path, key: str) -> dict[str, str]:
    """Write the three CLIs' settings under ``home``; the variables they need besides."""
    _write(home / ".config" / "opencode" / "opencode.json", opencode_config(url, key))
    _write(home / ".gemini" / "settings.json", gemini_settings())
    _write(home / ".qwen" / "settings.json", qwen_settings())
    return {
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "GOOGLE_GEMINI_BASE_URL": url,
        "GEMINI_API_KEY": key,
        "GEMINI_TELEMETRY_ENABLED": "false",
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "OPENAI_BASE_URL": f"{url}/qwen/v1",
        "OPENAI_API_KEY": key,
        "OPENAI_MODEL": CHAT_MODEL,
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
    }
