"""A key the API refuses for good, and a billing the Choice does not allow: the stream's asks
to stop, read from captures of the real CLIs under the fake model, and what the stop becomes."""

from __future__ import annotations

import json
import signal
from dataclasses import replace
from pathlib import Path

import pytest
from harness_helpers import jsonl, transcript_lines

from thirdshift import AuthFailed, Logs, Sessions, Watchdogs
from thirdshift._machine.stream_stops import billing_at_start, stream_stop
from thirdshift._machine.supervised import CliExit
from thirdshift._machine.verdict import Ran, verdict
from thirdshift._machine.watch import Watched
from thirdshift._machine.watchdogs import Watchdog
from thirdshift.errors import ConfigurationError
from thirdshift.harness import ClaudeReader, CodexReader, claude, codex, gemini
from thirdshift.harness._builtin.claude import ClaudeHarness
from thirdshift.harness._events import JsonEventReader
from thirdshift.testing import ScriptedOutside

STOPPED = Watched(
    cli_exit=CliExit(code=None, signal=signal.SIGTERM),
    spawn_error=None,
    log_error=None,
    all_gone=True,
    interrupted=False,
    containment="scan",
)
RAN = Ran(kind="k", harness=ClaudeHarness(), program="/bin/claude", log=Path("/l"), seconds=1.0)


def refused_after(reader: JsonEventReader, name: str) -> int | None:
    """The index of the line after which the reader first says the key is refused for good."""
    for index, line in enumerate(transcript_lines(name)):
        reader.feed(line)
        if reader.refused is not None:
            return index
    return None


def test_claude_on_a_key_refused_twice_in_a_row_asks_to_be_stopped() -> None:
    # Claude 2.1.197 retries a 401 ten times over about three minutes (three here, by
    # CLAUDE_CODE_MAX_RETRIES): the second retry shows the key refused twice in a row.
    lines = transcript_lines("claude-401-retries3")
    retries = [index for index, line in enumerate(lines) if '"api_retry"' in line]
    reader = ClaudeReader()
    assert refused_after(reader, "claude-401-retries3") == retries[1]
    assert reader.refused == (
        "the API refused its key 2 times in a row (401), and claude would go on retrying for "
        "minutes"
    )


@pytest.mark.parametrize(
    "name",
    [
        "claude-401-once",  # refused once, then answered: a retry may still be taken
        "claude-api-401",  # one retry only (CLAUDE_CODE_MAX_RETRIES=1): it gives up itself
        "claude-401-login",  # a login: Claude gives up itself after its second retry
        "claude-401-login-once",  # a login recovers after a first 401
    ],
)
def test_claude_is_let_be_where_it_recovers_or_gives_up_by_itself(name: str) -> None:
    assert refused_after(ClaudeReader(), name) is None


def test_codex_on_an_api_key_refused_twice_in_a_row_asks_to_be_stopped() -> None:
    lines = transcript_lines("codex-401-retries5")
    retries = [index for index, line in enumerate(lines) if "Reconnecting..." in line]
    reader = CodexReader()
    reader.billed("api")  # CODEX_API_KEY, as its settings said before it started
    assert refused_after(reader, "codex-401-retries5") == retries[1]
    assert reader.refused is not None
    assert reader.refused.startswith("the API refused its key 2 times in a row (401)")


def test_codex_on_a_login_or_a_billing_not_said_is_left_to_its_own_retries() -> None:
    for billing in ("subscription", None):
        reader = CodexReader()
        if billing is not None:
            reader.billed(billing)
        assert refused_after(reader, "codex-401-retries5") is None


def test_a_key_refused_for_good_stops_the_session_as_auth_failed() -> None:
    reader = ClaudeReader()
    refused_after(reader, "claude-401-retries3")
    watchdog = Watchdog(
        Watchdogs(idle=None, after_result=None),
        last_output=lambda: 0.0,
        turns_ended=lambda: 0,
        session_id=lambda: None,
        resume=None,
        stops=stream_stop(claude(), reader),
    )
    fired = watchdog.check(1.0, cli_running=True)
    assert fired is not None
    assert fired.what == "refused"

    decided = verdict(replace(STOPPED, fired=fired), reader, RAN)

    assert isinstance(decided.error, AuthFailed)
    assert str(decided.error) == (
        "claude was stopped: the API refused its key 2 times in a row (401), and claude would go "
        "on retrying for minutes"
    )
    assert not decided.error.retryable


# Billing


def claude_init(source: str | None) -> str:
    more = {} if source is None else {"apiKeySource": source}
    return jsonl(type="system", subtype="init", session_id="s1", model="m", **more)


@pytest.mark.parametrize(
    ("required", "source", "stopped"),
    [
        ("subscription", "apiKeyHelper", "by an API key"),  # a key from its settings
        ("api", "none", "on a plan's login (a subscription)"),
        ("api", None, "claude did not say how it bills"),
        ("subscription", "none", None),
        ("api", "ANTHROPIC_API_KEY", None),
    ],
)
def test_claude_is_stopped_as_its_init_says_a_billing_its_choice_does_not_allow(
    required: str, source: str | None, stopped: str | None
) -> None:
    reader = ClaudeReader()
    stop = stream_stop(claude(billing=required), reader)  # type: ignore[arg-type]
    assert stop() is None  # nothing said yet
    reader.feed(claude_init(source))
    fired = stop()
    if stopped is None:
        assert fired is None
        return
    assert fired is not None
    assert fired.what == "billing"
    assert stopped in fired.why

    decided = verdict(replace(STOPPED, fired=fired), reader, RAN)

    assert isinstance(decided.error, ConfigurationError)
    assert str(decided.error).startswith("claude was stopped as it started: ")


def test_a_stray_api_key_refuses_a_subscription_claude_before_it_starts() -> None:
    reader = ClaudeReader()
    with pytest.raises(ConfigurationError, match=r"requires billing='subscription'"):
        billing_at_start(claude(billing="subscription"), {"ANTHROPIC_API_KEY": "sk-x"}, reader)
    billing_at_start(claude(billing="api"), {"ANTHROPIC_API_KEY": "sk-x"}, reader)
    assert reader.billing == "api"  # told, before any line


def test_codex_says_its_billing_before_it_starts(tmp_path: Path) -> None:
    reader = CodexReader()
    billing_at_start(codex(billing="api"), {"CODEX_API_KEY": "k"}, reader)
    assert reader.billing == "api"

    (tmp_path / "auth.json").write_text(json.dumps({"auth_mode": "chatgpt", "tokens": {}}))
    login = {"CODEX_HOME": str(tmp_path)}
    billing_at_start(codex(billing="subscription"), login, CodexReader())
    with pytest.raises(ConfigurationError, match="would bill this session on a plan's login"):
        billing_at_start(codex(billing="api"), login, CodexReader())
    with pytest.raises(ConfigurationError, match="its settings do not say how it bills"):
        billing_at_start(codex(billing="api"), {"CODEX_HOME": str(tmp_path / "x")}, CodexReader())


def test_codex_records_the_billing_its_settings_said() -> None:
    reader = CodexReader()
    reader.billed("subscription")
    for line in transcript_lines("codex-fg-tool"):
        reader.feed(line)
    assert reader.ended().usage is not None
    assert reader.ended().usage.billing == "subscription"  # type: ignore[union-attr]


def test_a_billing_no_stream_says_is_refused_before_anything(tmp_path: Path) -> None:
    with (
        pytest.raises(ConfigurationError, match="cannot be required of gemini"),
        Sessions.within(
            Logs(tmp_path, "r"), tmp_path, gemini(billing="api"), outside=ScriptedOutside()
        ),
    ):
        pass


def test_a_billing_is_api_or_subscription() -> None:
    with pytest.raises(ValueError, match="billing must be None, 'api' or 'subscription'"):
        claude(billing="free")  # type: ignore[arg-type]


def test_a_refusal_the_cli_put_in_words_is_quoted_in_the_failure() -> None:
    reader = CodexReader()
    reader.billed("api")
    refused_after(reader, "codex-401-retries5")
    fired = stream_stop(codex(), reader)()
    assert fired is not None
    ran = replace(RAN, harness=codex().harness, program="/bin/codex")

    error = verdict(replace(STOPPED, fired=fired), reader, ran).error

    assert isinstance(error, AuthFailed)
    assert str(error).startswith(
        "codex was stopped: the API refused its key 2 times in a row (401), and codex would go "
        "on retrying: Reconnecting... 2/5 (unexpected status 401 Unauthorized: invalid api key"
    )
    assert error.diagnostic is not None
