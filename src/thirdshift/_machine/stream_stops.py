"""Stops the stream asks for besides the Budget: credentials refused for good, and a session
billed otherwise than its Choice requires.

Both are decided from the reader and the Choice alone, so they are tested in-process. The
billing has two places: a CLI whose settings say it before it starts (Codex's key or login,
Claude's ``ANTHROPIC_API_KEY``) is refused before anything starts, by :func:`billing_at_start`;
one whose stream says it (Claude's init) is stopped as soon as it does, by :func:`stream_stop`,
with the same whole-tree stop as a watchdog's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from thirdshift._machine.watchdogs import Fired
from thirdshift.errors import ConfigurationError
from thirdshift.harness._base import Choice, StreamReader


def billing_at_start(choice: Choice, env: Mapping[str, str], reader: StreamReader) -> None:
    """Tell ``reader`` how the CLI's settings say it will bill; a ``ConfigurationError`` when
    that is not what ``choice`` requires, or when only its settings could say and do not."""
    harness = choice.harness
    said = harness.billing(env)
    if said is not None:
        reader.billed(said)
    if choice.billing is None:
        return
    if said is not None and said != choice.billing:
        raise ConfigurationError(_mismatch(harness.name, choice.billing, said))
    if said is None and harness.billing_told == "before":
        raise ConfigurationError(
            f"{harness.name} cannot be told to bill {_described(choice.billing)}: its settings "
            "do not say how it bills (no key, no login it reports)"
        )


def stream_stop(choice: Choice, reader: StreamReader) -> Callable[[], Fired | None]:
    """What the watchdog asks after every read: stop the session now, and why, if the stream
    shows its credentials refused for good, or a billing ``choice`` does not allow."""
    check_billing = choice.billing is not None and choice.harness.billing_told == "stream"

    def stop() -> Fired | None:
        if check_billing and reader.session_id is not None:  # its init has been read
            said = reader.billing
            if said != choice.billing:
                cli = choice.harness.name
                why = (
                    f"{cli} did not say how it bills"
                    if said is None
                    else _mismatch(cli, choice.billing, said)
                )
                return Fired("billing", why)
        refused = reader.refused
        return None if refused is None else Fired("refused", refused)

    return stop


def _described(billing: str | None) -> str:
    if billing == "api":
        return "by an API key (one in its environment or its settings)"
    return "on a plan's login (a subscription)"


def _mismatch(cli: str, required: str | None, said: str) -> str:
    return (
        f"{cli} would bill this session {_described(said)}, and its Choice requires "
        f"billing={required!r}"
    )
