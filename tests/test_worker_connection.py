"""How ``thirdshift worker`` finds its server, as the ``temporal`` CLI does: Temporal's
environment configuration, then the flags over it (in-process: no server is reached)."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.service import TLSConfig

from thirdshift.temporal._connection import (
    Connection,
    ConnectionRefused,
    connection,
    why,
    with_port,
)


@pytest.mark.parametrize(
    ("given", "address"),
    [
        ("temporal.internal", "temporal.internal:7233"),
        ("temporal.internal:7000", "temporal.internal:7000"),
        ("10.0.0.5", "10.0.0.5:7233"),
        ("[::1]", "[::1]:7233"),
        ("[::1]:7000", "[::1]:7000"),
        ("::1", "[::1]:7233"),
    ],
)
def test_an_address_without_a_port_means_temporal_s_7233(given: str, address: str) -> None:
    assert with_port(given) == address


def test_nothing_configured_is_the_temporal_cli_s_own_default() -> None:
    chosen = connection(env={})

    assert chosen == Connection(address="localhost:7233", namespace="default")
    assert not chosen.guarded


def test_the_environment_gives_the_connection_and_the_flags_override_it() -> None:
    env = {
        "TEMPORAL_ADDRESS": "from-env:7233",
        "TEMPORAL_NAMESPACE": "env-ns",
        "TEMPORAL_API_KEY": "env-key",
    }

    from_env = connection(env=env)
    flagged = connection(address="from-flag", namespace="flag-ns", env=env)

    assert (from_env.address, from_env.namespace, from_env.api_key) == (
        "from-env:7233",
        "env-ns",
        "env-key",
    )
    assert from_env.tls is True  # an API key goes over TLS
    assert from_env.guarded
    assert (flagged.address, flagged.namespace) == ("from-flag:7233", "flag-ns")


def test_a_profile_of_the_configuration_file_and_tls_files_from_the_flags(tmp_path: Path) -> None:
    for name in ("cert.pem", "key.pem", "ca.pem", "other-ca.pem"):
        (tmp_path / name).write_text(f"-- {name} --")
    config = tmp_path / "temporal.toml"
    config.write_text(
        '[profile.prod]\naddress = "prod.internal"\nnamespace = "factory"\n'
        f'[profile.prod.tls]\nserver_ca_cert_path = "{tmp_path / "ca.pem"}"\n'
    )
    env = {"TEMPORAL_CONFIG_FILE": str(config)}

    chosen = connection(
        profile="prod",
        tls_cert=tmp_path / "cert.pem",
        tls_key=tmp_path / "key.pem",
        tls_ca=tmp_path / "other-ca.pem",
        env=env,
    )

    assert (chosen.address, chosen.namespace) == ("prod.internal:7233", "factory")
    assert isinstance(chosen.tls, TLSConfig)
    assert chosen.tls.client_cert == b"-- cert.pem --"
    assert chosen.tls.client_private_key == b"-- key.pem --"
    assert chosen.tls.server_root_ca_cert == b"-- other-ca.pem --"
    assert chosen.guarded


def test_an_api_key_file_is_read_and_stripped(tmp_path: Path) -> None:
    (tmp_path / "key").write_text("secret-key\n")

    chosen = connection(api_key_file=tmp_path / "key", env={})

    assert (chosen.api_key, chosen.tls) == ("secret-key", True)
    assert chosen.options()["api_key"] == "secret-key"


@pytest.mark.parametrize(
    ("asked", "says"),
    [
        ({"profile": "nowhere"}, "Profile 'nowhere' not found"),
        ({"tls_cert": Path("/no/such.pem")}, "cannot read /no/such.pem"),
        ({"api_key_file": Path("/no/such/key")}, "cannot read /no/such/key"),
    ],
)
def test_a_connection_that_cannot_be_made_as_asked_says_why_in_a_line(
    asked: dict[str, object], says: str
) -> None:
    with pytest.raises(ConnectionRefused) as refused:
        connection(env={}, **asked)  # type: ignore[arg-type]

    assert says in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_connection_error_is_said_by_its_gist() -> None:
    error = RuntimeError(
        "Failed client connect: Server connection error: tonic::transport::Error(Transport, "
        'ConnectError(ConnectError("tcp connect error", 127.0.0.1:1, Os { code: 111, kind: '
        'ConnectionRefused, message: "Connection refused" })))'
    )

    assert why(error) == "Connection refused"
    assert why(RuntimeError("Failed client connect: something else")) == "something else"
