"""The environment that points the real CLIs at the fake model, and nowhere else.

Everything a CLI could read a real identity or setting from is moved under a folder the caller
owns (``HOME``, ``CODEX_HOME``) or removed (tokens, keys, other endpoints, config folders); what
would phone home (telemetry, auto-update, error reports) is switched off.

What matters is also written where thirdshift's ``minimal`` environment policy cannot drop it:
Codex's provider in ``CODEX_HOME/config.toml``, reading its key from ``CODEX_API_KEY`` (a
variable ``minimal`` passes to Codex); Claude's switches in ``HOME/.claude/settings.json``,
whose ``env`` Claude applies itself.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from thirdshift._sandbox import MODEL_HOOK
from thirdshift.testing._wire import CLAUDE_TMP_ENV
from thirdshift.testing.fakemodel._homes import REMOVED as MORE_CLIS_REMOVED
from thirdshift.testing.fakemodel._homes import more_clis_env

API_KEY_ENV = "ANTHROPIC_API_KEY"
SUBSCRIBER_TOKEN_ENV = "CLAUDE_CODE_OAUTH_TOKEN"
CODEX_KEY_ENV = "CODEX_API_KEY"  # passed on by the `minimal` policy; set to the model's key here
CODEX_PROVIDER = "thirdshift-fake"
CODEX_MODEL = "gpt-5.5"  # Codex's default model gets no function tools from a custom provider

REMOVED = (
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "ANTHROPIC_VERTEX_BASE_URL",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CONFIG_DIR",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "XDG_CONFIG_HOME",
    "ALL_PROXY",
    "all_proxy",
    *MORE_CLIS_REMOVED,
)
"""Variables that could send a CLI elsewhere or hand it real credentials; never passed on."""


PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")

CLAUDE_SWITCHES = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}
"""Claude Code's switches for what would leave the machine: in the environment and in settings."""


def claude_tmp(home: Path) -> Path:
    """The temporary folder Claude is given under ``home``: its files stay in the play's."""
    return home / "claude-tmp"


def cli_tmp(home: Path) -> Path:
    """Every CLI's ``TMPDIR`` under ``home``: the real Claude makes ``$TMPDIR/claude-<uid>`` as
    it starts even when ``CLAUDE_CODE_TMPDIR`` names another folder (2.1.197)."""
    return home / "tmp"


def codex_config(url: str) -> str:
    """Codex's ``config.toml``: the fake model as its only provider, analytics off."""
    return (
        f'model = "{CODEX_MODEL}"\n'
        f'model_provider = "{CODEX_PROVIDER}"\n'
        "check_for_update_on_startup = false\n"
        "\n"
        f'[model_providers."{CODEX_PROVIDER}"]\n'
        'name = "thirdshift fake model"\n'
        f'base_url = "{url}/v1"\n'
        'wire_api = "responses"\n'
        f'env_key = "{CODEX_KEY_ENV}"\n'
        "\n"
        "[analytics]\n"
        "enabled = false\n"
    )


def fake_model_env(
    url: str,
    home: Path,
    base: Mapping[str, str] | None = None,
    *,
    key: str,
    subscriber: bool = False,
) -> dict[str, str]:
    """``base`` (default: ``os.environ``) pointed at the fake model at ``url``, homes in ``home``.

    Every CLI is given ``key``, the fake model's own (it answers no other). Writes
    ``<home>/.codex/config.toml``, ``<home>/.claude/settings.json`` and the other CLIs'
    settings (:mod:`.homes`); ``home`` is created private when missing. ``subscriber``: Claude
    gets the key as a login token instead of an API key, and so speaks as to a subscriber
    (``rate_limit_event`` lines, the "You've hit your session limit" text for
    :func:`~thirdshift.testing.steps.quota_spent`).
    """
    home = Path(home).absolute()
    codex_home = home / ".codex"
    codex_home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(codex_config(url), encoding="utf-8")
    claude_config = home / ".claude"
    claude_config.mkdir(mode=0o700, exist_ok=True)
    settings = {"env": {"ANTHROPIC_BASE_URL": url, **CLAUDE_SWITCHES}}
    (claude_config / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    claude_tmp(home).mkdir(mode=0o700, exist_ok=True)
    cli_tmp(home).mkdir(mode=0o700, exist_ok=True)
    env = {name: value for name, value in (os.environ if base is None else base).items()}
    for name in (*REMOVED, API_KEY_ENV):
        env.pop(name, None)
    no_proxy = ",".join(filter(None, ["127.0.0.1", "localhost", env.get("NO_PROXY")]))
    env.update(
        {
            "HOME": str(home),
            "CODEX_HOME": str(codex_home),
            "ANTHROPIC_BASE_URL": url,
            CLAUDE_TMP_ENV: str(claude_tmp(home)),
            "TMPDIR": str(cli_tmp(home)),
            SUBSCRIBER_TOKEN_ENV if subscriber else API_KEY_ENV: key,
            CODEX_KEY_ENV: key,
            **CLAUDE_SWITCHES,
            "NO_PROXY": no_proxy,
            "no_proxy": no_proxy,
            # Any other host is asked for through the fake model, which refuses it (501): an
            # update check, or opencode's plugin install from npm, fails at once, offline or not.
            **{name: url for name in PROXY_VARIABLES},
            # A sandboxed session reaches the fake model as its model API, keys and all.
            MODEL_HOOK: url.removeprefix("http://"),
            **more_clis_env(url, home, key),
        }
    )
    return env
