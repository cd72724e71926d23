"""Which names each kind of bind answers to (ecu_sim.web.guard), for the binds a process test
cannot make on this host: every address, one address of a board, IPv6; and which requests need
the token or the node's own page, for every header a browser may send."""

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
    headers = {} if origin is None else {"Origin": origin}
    assert (access.origin_refusal(method, path, headers, "127.0.0.1:8080") is not None) == refused


@pytest.mark.parametrize(("headers", "refused"), [
    ({"Sec-Fetch-Site": "cross-site"}, True),
    ({"Sec-Fetch-Site": "same-site"}, True),  # another port of the host: another page
    ({"Referer": "http://evil.example/page.html"}, True),
    ({"Referer": "http://127.0.0.1:9/"}, True),
    ({"Origin": "http://evil.example"}, True),
    ({"Sec-Fetch-Site": "same-origin", "Referer": "http://evil.example/"}, True),
    ({"Sec-Fetch-Site": "same-origin", "Referer": "http://127.0.0.1:8080/?token=t"}, False),
    ({"Sec-Fetch-Site": "none"}, False),  # the address typed, a bookmark
    ({}, False),  # a client that is not a browser
])
def test_the_recording_is_downloaded_only_from_the_nodes_own_page(
        headers: dict[str, str], refused: bool) -> None:
    """A GET, which any site's ``<img>`` sends without an ``Origin``: the browser's other headers
    say where it comes from."""
    access = access_for("127.0.0.1", None, False, ())
    refusal = access.origin_refusal("GET", "/api/recording", headers, "127.0.0.1:8080")
    assert (refusal is not None) == refused


def test_a_read_of_the_state_from_another_sites_page_is_not_refused_by_its_origin() -> None:
    """The Host check alone guards it: another site's script cannot read the answer."""
    access = access_for("127.0.0.1", None, False, ())
    headers = {"Sec-Fetch-Site": "cross-site", "Referer": "http://evil.example/"}
    assert access.origin_refusal("GET", "/api/state", headers, "127.0.0.1:8080") is None


@pytest.mark.parametrize("path", ["/api/control", "/api/recording"])
def test_the_controls_and_the_recording_need_the_token_where_one_is_set(path: str) -> None:
    access = access_for("0.0.0.0", "t", False, ())
    assert not access.token_allows(path, "")
    assert not access.token_allows(path, "wrong")
    assert access.token_allows(path, "t")


def test_without_a_token_set_the_recording_needs_none() -> None:
    """On loopback, as the controls: the page is this host's, as the host-local bus is."""
    assert access_for("127.0.0.1", None, False, ()).token_allows("/api/recording", "")


def test_the_state_needs_no_token_unless_web_read_needs_token() -> None:
    assert access_for("0.0.0.0", "t", False, ()).token_allows("/api/state", "")
    assert not access_for("0.0.0.0", "t", True, ()).token_allows("/api/state", "")
