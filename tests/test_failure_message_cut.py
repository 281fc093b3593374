"""A failed session's message quotes at most 2,000 characters of its diagnostic: never a part
of a secret that the cut would split (the cut falls before the secret, keeping what names it)."""

from __future__ import annotations

from thirdshift._machine.verdict import MESSAGE_CHARS, _bounded
from thirdshift._shown import shown

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_a_secret_at_the_cut_is_left_out_whole() -> None:
    diagnostic = "x" * (MESSAGE_CHARS - 16) + f" {TOKEN} and more"  # the cut: 15 into it

    message = shown(_bounded(diagnostic), "message")

    assert "A1b2" not in message  # not one character of the secret itself
    assert message.removesuffix("… (cut short)").endswith(" ghp_")
    assert message.endswith("… (cut short)")
