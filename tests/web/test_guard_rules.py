"""Which names each kind of bind answers to (ecu_sim.web.guard), for the binds a process test
cannot make on this host: every address, one address of a board, IPv6."""

from __future__ import annotations

import socket

import pytest

from ecu_sim.web.guard import access_for


def _takes(bind: str, host: str, allowed: tuple[str, ...] = ()) -> bool:
    return access_for(bind, "t", False, allowed).host_refusal(host) is None


@pytest.mark.parametrize("host", ["10.1.2.3:8080", "[fe80::1]:8080", "localhost:8080", "127.0.0.1:8080"])
def test_a_node_on_every_address_answers_to_any_address_and_localhost(host: str) -> None:
    assert _takes("0.0.0.0", host)
    assert _takes("::", host)


def test_a_node_on_every_address_answers_to_the_hosts_own_name_and_its_mdns_name() -> None:
    name = socket.gethostname().split(".")[0]
    assert _takes("0.0.0.0", f"{name}:8080")
    assert _takes("0.0.0.0", f"{name.upper()}.local:8080")


def test_a_node_on_one_address_answers_to_it_but_not_to_another_address() -> None:
    assert _takes("10.1.2.3", "10.1.2.3:8080")
    assert not _takes("10.1.2.3", "10.9.9.9:8080")
    assert not _takes("10.1.2.3", "localhost:8080")


def test_a_node_on_loopback_answers_to_no_address_of_the_lan() -> None:
    assert not _takes("127.0.0.1", "10.1.2.3:8080")
    assert _takes("::1", "[::1]:8080")


@pytest.mark.parametrize("bind", ["127.0.0.1", "0.0.0.0", "10.1.2.3"])
def test_another_sites_name_is_refused_unless_allowed(bind: str) -> None:
    assert not _takes(bind, "rebind.example:8080")
    assert _takes(bind, "Rebind.Example:8080", ("rebind.example",))


@pytest.mark.parametrize("host", ["", "rebind.example:http", "[::1:8080"])
def test_a_host_header_that_is_missing_or_malformed_is_refused(host: str) -> None:
    assert access_for("127.0.0.1", None, False, ()).host_refusal(host) is not None


@pytest.mark.parametrize(("method", "path", "origin", "refused"), [
    ("POST", "/api/control", "http://evil.example", True),
    ("POST", "/api/control", "null", True),
    ("GET", "/api/ws", "http://127.0.0.1:9", True),
    ("POST", "/api/control", "http://127.0.0.1:8080", False),
    ("GET", "/api/ws", "https://127.0.0.1:8080", False),
    ("POST", "/api/control", None, False),
    ("GET", "/api/state", "http://evil.example", False),
])
def test_a_websocket_or_a_change_must_come_from_the_nodes_own_origin(
        method: str, path: str, origin: str | None, refused: bool) -> None:
    access = access_for("127.0.0.1", None, False, ())
    assert (access.origin_refusal(method, path, origin, "127.0.0.1:8080") is not None) == refused
