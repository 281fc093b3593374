"""The Sandbox value: what it takes, what it refuses, and how a Choice carries it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

import thirdshift
from thirdshift import Sandbox
from thirdshift._json_form import record_json
from thirdshift._record_files import record_problem
from thirdshift._records import SessionRecord
from thirdshift._sandbox import Endpoint, endpoint
from thirdshift.harness import ClaudeHarness


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("api.anthropic.com", Endpoint("api.anthropic.com", 443)),
        ("API.Example.COM:8443", Endpoint("api.example.com", 8443)),
        ("127.0.0.1:43121", Endpoint("127.0.0.1", 43121)),
        ("[::1]:7233", Endpoint("::1", 7233)),
        ("[2001:db8::1]", Endpoint("2001:db8::1", 443)),
        ("localhost:1", Endpoint("localhost", 1)),
        ("example.com.:80", Endpoint("example.com", 80)),
    ],
)
def test_an_endpoint_is_a_host_and_a_port_443_unless_given(text: str, parsed: Endpoint) -> None:
    assert endpoint(text) == parsed


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("https://api.example.com", "no scheme, path or user"),
        ("api.example.com/v1", "no scheme, path or user"),
        ("user@api.example.com", "no scheme, path or user"),
        ("*.example.com", "not 'host' or 'host:port'"),
        ("a b", "not 'host' or 'host:port'"),
        ("", "not 'host' or 'host:port'"),
        ("example.com:0", "the port must be 1 to 65535"),
        ("example.com:65536", "the port must be 1 to 65535"),
        ("example.com:", "the port must be 1 to 65535"),
        ("example.com:http", "the port must be 1 to 65535"),
        ("example.com:٣", "the port must be 1 to 65535"),
        ("::1", "write an IPv6 address as '[addr]:port'"),
        ("[::1", "write an IPv6 address as '[addr]:port'"),
        ("[nope]:80", "is no IPv6 address"),
    ],
)
def test_a_malformed_endpoint_is_refused_saying_why(text: str, says: str) -> None:
    with pytest.raises(ValueError, match="network endpoint") as refused:
        Sandbox(network=(text,))
    assert says in str(refused.value)


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.1", True),
        ("::1", True),
        ("localhost", True),
        ("10.0.0.1", False),
        ("169.254.169.254", False),
        ("example.com", False),
    ],
)
def test_an_endpoint_knows_whether_it_is_the_machine_itself(address: str, loopback: bool) -> None:
    assert Endpoint(address, 80).loopback is loopback


def test_the_defaults_add_nothing_and_cap_processes_only() -> None:
    sandbox = Sandbox()

    assert (sandbox.network, sandbox.read, sandbox.write) == ((), (), ())
    assert (sandbox.pids, sandbox.memory) == (4096, None)


def test_endpoints_and_paths_are_kept_as_tuples() -> None:
    sandbox = Sandbox(
        network=["api.example.com"],  # type: ignore[arg-type]
        read=["/opt/data"],  # type: ignore[arg-type]
        write=[Path("/srv/out")],  # type: ignore[arg-type]
    )

    assert sandbox.network == ("api.example.com",)
    assert sandbox.endpoints == (Endpoint("api.example.com", 443),)
    assert sandbox.read == ("/opt/data",)
    assert sandbox.write == ("/srv/out",)  # texts: the value travels as JSON


@pytest.mark.parametrize(
    ("given", "error", "says"),
    [
        ({"network": "api.example.com"}, TypeError, "not one text"),
        ({"network": (443,)}, TypeError, "a 'host:port' text"),
        ({"read": "/opt"}, TypeError, "not one path"),
        ({"write": (3,)}, TypeError, "holds paths"),
        ({"read": ("relative/path",)}, ValueError, "must be absolute"),
        ({"write": ("/a\0b",)}, ValueError, "holds a NUL"),
        ({"pids": 0}, ValueError, "pids must be at least 1"),
        ({"pids": 2.5}, ValueError, "pids must be None or a whole number"),
        ({"pids": True}, ValueError, "pids must be None or a whole number"),
        ({"memory": (1 << 20) - 1}, ValueError, "memory must be at least 1048576"),
        ({"memory": "1G"}, ValueError, "memory must be None or a whole number"),
    ],
)
def test_out_of_range_values_are_refused_when_made(
    given: dict[str, object], error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        Sandbox(**given)  # type: ignore[arg-type]


def test_caps_may_be_turned_off_or_set_at_their_least() -> None:
    assert Sandbox(pids=None, memory=1 << 20).pids is None
    assert Sandbox(pids=1).pids == 1


def test_every_factory_and_choice_by_name_take_a_sandbox() -> None:
    sandbox = Sandbox(network=("api.example.com",))

    made = [
        thirdshift.claude(sandbox=sandbox),
        thirdshift.codex(sandbox=sandbox),
        thirdshift.opencode(sandbox=sandbox),
        thirdshift.gemini(sandbox=sandbox),
        thirdshift.qwen(sandbox=sandbox),
        thirdshift.choice("claude", sandbox=sandbox),
    ]

    assert [choice.sandbox for choice in made] == [sandbox] * len(made)


def test_a_sandboxed_choice_gets_the_minimal_environment_unless_it_asks_otherwise() -> None:
    assert thirdshift.claude(sandbox=Sandbox()).env_policy == "minimal"
    assert thirdshift.choice("codex", sandbox=Sandbox()).env_policy == "minimal"
    assert thirdshift.claude(sandbox=Sandbox(), env_policy="inherit").env_policy == "inherit"
    assert thirdshift.claude().env_policy == "inherit"
    assert thirdshift.claude().sandbox is None


def test_a_choice_refuses_what_is_no_sandbox() -> None:
    with pytest.raises(TypeError, match=r"sandbox must be a thirdshift\.Sandbox or None"):
        thirdshift.Choice(ClaudeHarness(), sandbox=True)  # type: ignore[arg-type]


@pytest.mark.parametrize("sandboxed", [True, False])
def test_a_record_says_whether_its_session_ran_sandboxed(sandboxed: bool, tmp_path: Path) -> None:
    record = SessionRecord(
        kind="implement",
        log=tmp_path / "a.jsonl",
        session_id="s1",
        killed=(),
        final_message="done",
        usage=None,
        started_at=datetime(2026, 12, 7, tzinfo=UTC),
        duration=1.0,
        sandbox=sandboxed,
    )

    written = record_json(record)

    assert written["sandbox"] is sandboxed
    assert record_problem(written) is None
    assert record_problem({**written, "sandbox": "yes"}) == "its sandbox is not what a record holds"
