"""Redaction (#15.5): a secret of any common shape, anywhere in a line, never reaches a person.

Not whole, and not in part where a line is cut: every place that shortens stream text for a
person (a progress line, a killed task's description, an error text) cuts it where no secret is
split, and what it keeps goes through :func:`thirdshift._shown.shown`. The property is checked
the strong way: the same line with the secret's every character changed is shown exactly the
same, so not one character of it can have got through.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from harness_helpers import jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from thirdshift import ThirdshiftError
from thirdshift._machine.leftovers import described
from thirdshift._redaction import DECIDED_WITHIN, REDACTED, redacted, safe_cut
from thirdshift._shown import shown
from thirdshift.harness import ClaudeReader
from thirdshift.harness._base import checked_session_id
from thirdshift.harness._lines import MAX_DETAIL, bash_line, cut, shorten

ALNUM = string.ascii_letters + string.digits
BASE64URL = ALNUM + "_-"
# What a password written unquoted is made of: no space, quote, or the `& ; ,` that end a
# value in a query string or a shell line.
PASSWORD = ALNUM + "!#$%*+-./:=?@^_~"
# A quoted value may hold spaces and the separators too (not `= : -`, so that a second shape
# cannot start inside it and run past the closing quote: more redaction, but a different line).
QUOTED = ALNUM + " !#$%&*+,./;?@^_~"
URL_PASSWORD = ALNUM + "-._~%!$*+"
FLAG_VALUE = ALNUM + "!#$%*+./:=?@^_~"  # a value after a flag never starts with `-`
BEARER = ALNUM + "._~+/-"


@dataclass(frozen=True)
class Shape:
    """A line that holds a secret at ``{}``, and what the secret is made of."""

    line: str
    alphabet: str
    min_size: int = 8
    max_size: int = 48

    def secrets(self) -> st.SearchStrategy[str]:
        return st.text(self.alphabet, min_size=self.min_size, max_size=self.max_size)


SHAPES = {
    "env password": Shape("DB_PASSWORD={} ./migrate", PASSWORD),
    "PGPASSWORD": Shape("PGPASSWORD={} psql -h db", PASSWORD),
    "short password name": Shape("export DB_PASS={}", PASSWORD),
    "password flag": Shape("mysql --password {} db", FLAG_VALUE),
    "password flag with =": Shape("mysql --password={} db", PASSWORD),
    "token flag": Shape("gh auth --with-token {}", FLAG_VALUE),
    "api key flag": Shape("tool --api-key {}", FLAG_VALUE),
    "json password": Shape('{{"user": "me", "password": "{}"}}', QUOTED),
    "yaml password": Shape("password: '{}'", QUOTED),
    "url credentials": Shape(
        "git clone https://oauth2:{}@gitlab.example.com/g/r.git", URL_PASSWORD
    ),
    "url gitlab token": Shape("https://oauth2:glpat-{}@gitlab.com", BASE64URL, 20),
    "curl user": Shape("curl -u deploy:{} https://example.com", PASSWORD),
    "curl long user flag": Shape("curl --user deploy:{} https://example.com", PASSWORD),
    "api key header": Shape("curl -H 'X-Api-Key: {}' https://example.com", PASSWORD),
    "auth token header": Shape('curl -H "X-Auth-Token: {}"', PASSWORD),
    "bearer": Shape("curl -H 'Authorization: Bearer {}' https://example.com", BEARER),
    "basic": Shape("Authorization: Basic {}", BASE64URL),
    "google api key": Shape("curl maps?key=AIza{}", BASE64URL, 35, 35),
    "jwt": Shape("token eyJhbGciOiJIUzI1NiJ9.eyJ{}", BASE64URL + ".", 16),
    "github token": Shape("git push https://ghp_{}@github.com", ALNUM, 36, 36),
    "github fine-grained token": Shape("github_pat_{}", ALNUM + "_", 40, 82),
    "openai key": Shape("OPENAI_API_KEY=sk-proj-{}", BASE64URL, 20),
    "anthropic key": Shape("key sk-ant-api03-{}", BASE64URL, 20),
    "aws key id": Shape("aws AKIA{} done", string.ascii_uppercase + string.digits, 16, 16),
    "aws secret": Shape("AWS_SECRET_ACCESS_KEY={}", ALNUM + "+/"),
    "github token variable": Shape("GITHUB_TOKEN={} gh pr create", PASSWORD),
    "client secret": Shape("?client_id=1&client_secret={}&x=1", ALNUM + "-._~"),
    "slack token": Shape("slack xoxb-{}", ALNUM + "-"),
    "npm token": Shape("//registry.npmjs.org/:_authToken=npm_{}", ALNUM, 36, 36),
    "docker auth": Shape('{{"auths": {{"ghcr.io": {{"auth": "{}"}}}}}}', ALNUM + "+/"),
    "private key": Shape("-----BEGIN OPENSSH PRIVATE KEY----- {} -----END", ALNUM + "+/="),
}

# Arbitrary text on either side of the shape, set off from it by whitespace.
_context = st.text(max_size=150)
_space = st.sampled_from([" ", "\t", "\n", "  "])
surroundings = st.tuples(_context, _space, _space, _context)


def changed(secret: str, alphabet: str) -> str:
    """``secret`` with each character replaced by the next one of ``alphabet``."""
    return "".join(
        alphabet[(alphabet.index(c) + 1) % len(alphabet)] if c in alphabet else c for c in secret
    )


# Every way stream text is shortened and shown; each takes the line and a limit.
Pipeline = Callable[[str, int], str]
PIPELINES: dict[str, Pipeline] = {
    "progress line": lambda text, _: shown(text),
    "message": lambda text, _: shown(text, "message"),
    "bash progress line": lambda text, _: shown(bash_line(text)),
    "shortened": lambda text, limit: shown(shorten(text, limit)),
    "cut message": lambda text, limit: shown(cut(text, limit), "message"),
    "left-over process": lambda text, _: shown(described(["/bin/sh", "-c", text])),
}


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
@settings(max_examples=60)
@given(data=st.data(), around=surroundings)
def test_no_character_of_a_secret_reaches_a_shown_line(
    shape: Shape, data: st.DataObject, around: tuple[str, str, str, str]
) -> None:
    before, pad, pad_after, after = around
    secret = data.draw(shape.secrets(), label="secret")
    other = changed(secret, shape.alphabet)
    limit = data.draw(st.integers(min_value=0, max_value=len(before) + len(shape.line) + 60))

    def line(value: str) -> str:
        return before + pad + shape.line.format(value) + pad_after + after

    for name, pipeline in PIPELINES.items():
        assert pipeline(line(secret), limit) == pipeline(line(other), limit), name


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_each_shape_is_redacted_on_its_own(shape: Shape) -> None:
    secret = (shape.alphabet[::-1] * 8)[: max(shape.min_size, min(shape.max_size, 40))]
    text = shape.line.format(secret)

    assert secret not in redacted(text)
    assert REDACTED in redacted(text)


TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2


def test_a_cut_progress_line_shows_no_part_of_a_token() -> None:
    # Before, the line was cut to 100 characters first: "ghp_" and 14 characters of the token
    # were left, too few for its shape, and shown.
    command = "echo " + "x" * 76 + " " + TOKEN + " | gh auth login --with-token"
    use = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": command}}

    [line] = ClaudeReader().feed(jsonl(type="assistant", message={"content": [use]}))

    assert shown(line) == "$ echo " + "x" * 76 + " ghp_…"


@pytest.mark.parametrize("at", range(70, 125))
def test_a_cut_at_any_point_of_a_secret_keeps_none_of_it(at: int) -> None:
    text = "x" * 70 + "DB_PASSWORD=hunter2hunter2 " + TOKEN + " https://u:pa55word@host"

    kept = shown(shorten(text, at))

    for secret in ("hunter2", "A1b2C3", "pa55word"):
        assert secret not in kept
    assert len(shorten(text, at)) <= at + 1


def test_a_cut_falls_before_a_secret_it_would_split() -> None:
    text = "see DB_PASSWORD=hunter2hunter2 and more"

    assert safe_cut(text, 20) == len("see DB_PASSWORD=")
    assert safe_cut(text, 8) == 8  # inside the name: nothing secret is kept
    assert safe_cut(text, 30) == 30  # after it
    assert safe_cut("short", 100) == len("short")


def test_a_secret_that_needs_what_follows_it_is_not_cut_from_it() -> None:
    # A URL's password is one only because an "@" follows: a cut just before it would keep
    # "https://u:pa55word", which nothing can tell from a port or a path.
    text = "git clone https://u:pa55word@host/r.git"
    at = text.index("@")

    assert safe_cut(text, at) == text.index("pa55")
    assert "pa55word" not in shown(shorten(text, at))


def test_an_error_text_cut_past_its_limit_keeps_no_part_of_a_split_secret() -> None:
    text = "e" * 990 + " Authorization: Bearer " + "t0k3n" * 10
    start = text.index("t0k3n")

    assert cut(text, start + 7) == (
        f"{text[:start]}… (cut: {len(text) - start} more characters in the Session log)"
    )


@pytest.mark.parametrize(
    "harmless",
    [
        "max_tokens=100",
        "tokenizer=bert",
        "bypass=1",
        "author: me",
        "PASSENGER=3",
        "secrets: 2",
        "git push -u origin main",
        "https://example.com:8080/path",
        "ssh://git@github.com/o/r.git",
        "the token is valid",
        "eyJ",
    ],
)
def test_what_only_looks_like_a_secret_is_left_alone(harmless: str) -> None:
    assert redacted(harmless) == harmless


def test_redaction_keeps_what_was_there_so_a_reader_still_sees_it() -> None:
    assert redacted("PGPASSWORD=x psql") == f"PGPASSWORD={REDACTED} psql"
    assert redacted('{"password": "a b"}') == f'{{"password": "{REDACTED}"}}'
    assert redacted("curl -u me:pw https://h") == f"curl -u me:{REDACTED} https://h"
    assert redacted("https://oauth2:glpat-abcdefghij0123456789@h") == (
        f"https://oauth2:{REDACTED}@h"
    )
    assert redacted("x eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig y") == f"x eyJ{REDACTED} y"
    assert redacted("AIzaSyA-1234567890abcdefghijklmnopqrstu") == f"AIza{REDACTED}"
    assert redacted("--token abc --verbose") == f"--token {REDACTED} --verbose"


@pytest.mark.parametrize("limit", [0, 1, MAX_DETAIL, 500])
def test_a_huge_line_is_cut_by_looking_at_its_start_only(limit: int) -> None:
    # A hostile stream's 4 MiB command: the cut looks for secrets near the cut, not in it all.
    text = "x" * (4 << 20)

    assert safe_cut(text, limit) == limit


def test_a_refused_session_id_is_named_without_its_secret() -> None:
    with pytest.raises(ThirdshiftError) as raised:
        checked_session_id("x" * 85 + " " + TOKEN)

    assert str(raised.value) == f"refusing to resume session id '{'x' * 85} ghp_…': not a plain id"


def test_the_longest_shape_is_told_within_what_the_cut_looks_at() -> None:
    # A URL's user and password of 256 characters each: a cut inside the password must look
    # past itself for the "@" that makes it one, and DECIDED_WITHIN lets it.
    user, password = "u" * 256, "p" * 256
    text = f"git clone https://{user}:{password}@host/r.git"
    secret_at = text.index(password)
    at_sign = text.index("@")

    assert len(f"://{user}:{password}@") <= DECIDED_WITHIN
    assert safe_cut(text, secret_at - 1) == secret_at - 1  # in the user: kept
    for cut_at in (secret_at + 1, secret_at + 128, at_sign - 1, at_sign):
        assert safe_cut(text, cut_at) == secret_at
    assert safe_cut(text, at_sign + 1) == at_sign + 1


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("GITHUB_TOKEN=--APIKEY-0 gh pr create", f"GITHUB_TOKEN={REDACTED} gh pr create"),
        ("PGPASSWORD=--token-x psql -h db", f"PGPASSWORD={REDACTED} psql -h db"),
        ("tool --api-key abc --token def x", f"tool --api-key {REDACTED} --token {REDACTED} x"),
    ],
)
def test_what_looks_like_a_flag_inside_a_secret_is_part_of_it(text: str, shown: str) -> None:
    # Found by hypothesis: the password `--APIKEY-0` read as a flag, its "value" the next word.
    assert redacted(text) == shown
