"""Describing, filtering and merging the work a session left running (_machine/leftovers.py)."""

from __future__ import annotations

from thirdshift._machine.leftovers import described, is_helper, merged
from thirdshift._shown import shown
from thirdshift.harness import gemini
from thirdshift.harness._builtin.gemini import unwrap_gemini_script
from thirdshift.harness._lines import MAX_KILLED, MAX_KILLED_LISTED


def test_a_shell_script_is_described_by_its_script() -> None:
    assert described(("/bin/bash", "-c", "npm run dev")) == "npm run dev"
    assert described(("sh", "-lc", "pytest -x")) == "pytest -x"


def test_any_other_command_is_described_by_its_argv_joined() -> None:
    assert described(("node", "server.js", "--port", "3000")) == "node server.js --port 3000"
    assert described(("bash", "-x", "run.sh")) == "bash -x run.sh"


def test_a_hostile_command_line_is_escaped_onto_one_line_and_shortened() -> None:
    assert described(("sleep\ngone\x1b[2J", "1")) == "sleep\\x0agone\\x1b[2J 1"
    long = described(("x" * 10_000,))
    assert long == "x" * MAX_KILLED + "…"


def test_a_helper_is_matched_by_its_command_line_against_the_harness_patterns() -> None:
    patterns = ("node */mcp-server-*", "uvx mcp-*")
    assert is_helper(("node", "/opt/mcp-server-git", "--stdio"), patterns)
    assert is_helper(("uvx", "mcp-fetch"), patterns)
    assert not is_helper(("node", "server.js"), patterns)
    assert not is_helper(("node", "/opt/mcp-server-git"), ())


def test_work_the_stream_named_already_is_named_once() -> None:
    assert merged(("pytest -x",), ["pytest -x", "npm run dev"]) == ("pytest -x", "npm run dev")
    # The stream names the command with its shell, or the supervisor does: the same work.
    assert merged(("/bin/bash -lc 'sleep 300'",), ["sleep 300"]) == ("/bin/bash -lc 'sleep 300'",)
    assert merged((), ["sleep 300", "sleep 300"]) == ("sleep 300", "sleep 300")


def test_the_merged_list_is_capped_with_and_n_more() -> None:
    found = [f"sleep {n}" for n in range(30)]
    assert merged((), found, unlisted=5) == (*found[: MAX_KILLED_LISTED - 1], "and 16 more")
    # Processes that could not be read are still said, under the cap too.
    assert merged(("a",), [], unlisted=2) == ("a", "and 2 more")
    assert merged((), [], unlisted=2) == ("2 processes",)
    full = (*(f"task {n}" for n in range(MAX_KILLED_LISTED - 1)), "and 7 more")
    assert merged(full, ["sleep 1"]) == full


GEMINI_SCRIPT = (
    "shopt -u promptvars nullglob extglob nocaseglob dotglob; "
    "_bgpids_file=/tmp/gemini-shell-OpfqXZ/bgpids.tmp\n"
    "(\n"
    "  trap 'jobs -p > \"$_bgpids_file\"' EXIT\n"
    "sh long-work.sh\n"
    ")\n"
    "__code=$?\n"
    "exit $__code"
)
"""How the real Gemini CLI 0.61.0 ran ``sh long-work.sh`` (seen in /proc by the supervisor)."""


def test_gemini_s_wrapping_of_a_command_is_taken_off() -> None:
    unwrap = gemini().harness.unwrap_command
    assert described(("bash", "-c", GEMINI_SCRIPT), unwrap) == "sh long-work.sh"
    assert unwrap_gemini_script(GEMINI_SCRIPT.replace("sh long-work.sh", "a\nb")) == "a\nb"
    assert described(("bash", "-c", GEMINI_SCRIPT)) == shown(GEMINI_SCRIPT)  # no unwrap given
    # Anything that is not exactly the wrapping stays as it is.
    assert unwrap_gemini_script("npm run dev") == "npm run dev"
    assert unwrap_gemini_script(GEMINI_SCRIPT + "\necho more") == GEMINI_SCRIPT + "\necho more"
    no_file = GEMINI_SCRIPT.replace("_bgpids_file=", "x=", 1)
    assert unwrap_gemini_script(no_file) == no_file


def test_a_subshell_with_redirections_is_described_by_what_it_runs() -> None:
    # `(cmd) </dev/null >/dev/null 2>&1 &` leaves the shell's child for the group behind.
    for script, shown_as in [
        ("(sleep 300) </dev/null >/dev/null 2>&1", "sleep 300"),
        ("(sleep 300) </dev/null >/dev/null 2>&1 &", "sleep 300"),
        ("( make test )>log 2>&1", "make test"),
        ("(x | y) > out", "x | y"),
    ]:
        assert described(["bash", "-c", script]) == shown_as
    # More than one group, or anything else around it: the script as it is.
    assert described(["bash", "-c", "(a) ; (b)"]) == "(a) ; (b)"
    assert described(["sh", "-c", "cd x && (make) > log"]) == "cd x && (make) > log"
