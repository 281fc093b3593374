"""What a sandboxed session may reach, and the environment that points its CLI there (pure)."""

from __future__ import annotations

from thirdshift import Sandbox
from thirdshift._machine.sandbox.egress import FIRST_INSIDE_PORT, egress
from thirdshift._sandbox import MODEL_HOOK, WRITE_HOOK, Api, Endpoint, SandboxNeeds

CLAUDE_LIKE = SandboxNeeds(
    apis=(
        Api(
            "https://api.anthropic.com",
            "ANTHROPIC_BASE_URL",
            ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"),
        ),
    ),
    endpoints=("console.example.com",),
    unneeded=("updates.example.com",),
)
KEY = "sk-ant-real-key"


def test_a_key_never_enters_the_sandbox_a_placeholder_does() -> None:
    reached = egress(CLAUDE_LIKE, Sandbox(), {"ANTHROPIC_API_KEY": KEY}, {})

    placeholder = reached.env["ANTHROPIC_API_KEY"]
    assert KEY not in reached.env.values()
    assert placeholder.startswith("thirdshift-sandbox-anthropic-api-key-")
    [relay] = reached.relays
    assert relay.keys == ((placeholder, KEY),)


def test_each_session_gets_placeholders_of_its_own() -> None:
    first = egress(CLAUDE_LIKE, Sandbox(), {"ANTHROPIC_API_KEY": KEY}, {})
    second = egress(CLAUDE_LIKE, Sandbox(), {"ANTHROPIC_API_KEY": KEY}, {})

    assert first.env["ANTHROPIC_API_KEY"] != second.env["ANTHROPIC_API_KEY"]


def test_an_api_elsewhere_is_reached_through_a_relay_on_loopback_its_base_url_pointed_there() -> (
    None
):
    reached = egress(
        CLAUDE_LIKE,
        Sandbox(),
        {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": "https://llm.example.com/anthropic/"},
        {},
    )

    [relay] = reached.relays
    assert relay.inside == Endpoint("127.0.0.1", FIRST_INSIDE_PORT + 1)
    assert relay.upstream == "https://llm.example.com:443"
    relayed = f"http://127.0.0.1:{FIRST_INSIDE_PORT + 1}/anthropic"
    assert reached.env["ANTHROPIC_BASE_URL"] == relayed
    assert reached.proxy == Endpoint("127.0.0.1", FIRST_INSIDE_PORT)


def test_an_api_on_the_machines_loopback_answers_at_the_same_address() -> None:
    base = "http://127.0.0.1:43121"
    reached = egress(
        CLAUDE_LIKE, Sandbox(), {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": base}, {}
    )

    [relay] = reached.relays
    assert relay.inside == Endpoint("127.0.0.1", 43121)
    assert relay.upstream == "http://127.0.0.1:43121"
    assert reached.env["ANTHROPIC_BASE_URL"] == base  # unchanged


def test_without_a_key_the_api_is_reached_by_name_through_the_proxy() -> None:
    reached = egress(CLAUDE_LIKE, Sandbox(), {}, {})

    assert reached.relays == ()
    assert Endpoint("api.anthropic.com", 443) in reached.allowed
    assert Endpoint("console.example.com", 443) in reached.allowed
    assert "ANTHROPIC_BASE_URL" not in reached.env


def test_the_proxy_variables_point_at_the_forward_proxy_and_loopback_goes_direct() -> None:
    reached = egress(
        CLAUDE_LIKE, Sandbox(), {"HTTPS_PROXY": "http://corp:8080", "NO_PROXY": "corp"}, {}
    )

    proxy = f"http://127.0.0.1:{FIRST_INSIDE_PORT}"
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy"):
        assert reached.env[name] == proxy
    assert reached.env["NO_PROXY"] == reached.env["no_proxy"] == "127.0.0.1,localhost,::1"


def test_what_the_sandbox_adds_is_reached_loopback_at_its_address_and_the_rest_by_name() -> None:
    added = Sandbox(network=("127.0.0.1:7000", "pypi.org", "[::1]:9000"))

    reached = egress(SandboxNeeds(), added, {}, {})

    assert {relay.inside for relay in reached.relays} == {
        Endpoint("127.0.0.1", 7000),
        Endpoint("::1", 9000),
    }
    assert all(relay.keys == () for relay in reached.relays)  # no key goes to what was added
    assert Endpoint("pypi.org", 443) in reached.allowed


def test_a_fake_model_added_by_the_testing_toolkit_gets_the_keys_as_an_api_does() -> None:
    reached = egress(
        CLAUDE_LIKE,
        Sandbox(),
        {"ANTHROPIC_API_KEY": KEY, MODEL_HOOK: "127.0.0.1:5555", WRITE_HOOK: "/x"},
        {MODEL_HOOK: "127.0.0.1:5555"},
    )

    model = next(relay for relay in reached.relays if relay.inside.port == 5555)
    assert (model.inside, model.upstream) == (Endpoint("127.0.0.1", 5555), "http://127.0.0.1:5555")
    assert model.keys == ((reached.env["ANTHROPIC_API_KEY"], KEY),)
    assert MODEL_HOOK not in reached.env  # the orchestrator's, never the CLI's
    assert WRITE_HOOK not in reached.env


def test_inside_ports_never_clash_with_a_loopback_endpoint() -> None:
    taken = Sandbox(network=(f"127.0.0.1:{FIRST_INSIDE_PORT}",))

    reached = egress(CLAUDE_LIKE, taken, {"ANTHROPIC_API_KEY": KEY}, {})

    ports = [endpoint.port for endpoint in reached.listening]
    assert len(ports) == len(set(ports))
    assert reached.proxy.port == FIRST_INSIDE_PORT + 1


def test_the_hosts_a_cli_does_without_are_refused_quietly() -> None:
    reached = egress(CLAUDE_LIKE, Sandbox(), {}, {})

    assert reached.quiet == frozenset({"updates.example.com"})
    assert Endpoint("updates.example.com", 443) not in reached.allowed
