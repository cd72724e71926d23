"""Another site cannot drive the node's page: through real ``ecu-sim`` processes and their HTTP API.

A request must name the node by the address it serves (or ``localhost`` on loopback, or a name
of ``[run] web_allowed_hosts``): a foreign ``Host`` is what a browser sends after DNS rebinding.
A WebSocket or a control must come from the node's own page: a foreign ``Origin`` is what a
browser sends for another site's script. Both are refused 403 with one line of reason, and
change nothing; off loopback the same holds with the token.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import HANG_S, Node, Udp
from tests.helpers.webnode import Page, on_machine, state_on

pytestmark = pytest.mark.slow
aiohttp = pytest.importorskip("aiohttp", reason="the web extra (aiohttp) is not installed")

JSON = {"Content-Type": "application/json"}


@pytest.fixture
def ccm(start: Callable[..., Node], udp: Udp) -> Iterator[Page]:
    """A CCM alone with its page on loopback, its set speed 90 km/h."""
    yield Page(start("ccm", *udp.args(), "--set-speed", "90", "--web", "127.0.0.1:0"))


def _port(page: Page) -> int:
    port = urlsplit(page.url).port
    assert port is not None
    return port


def _error(body: bytes) -> str:
    reason = json.loads(body)["error"]
    assert isinstance(reason, str)
    return reason


def test_a_control_naming_another_host_is_refused_and_changes_nothing(ccm: Page) -> None:
    body = json.dumps({"set_speed_kph": 60}).encode()
    foreign = {**JSON, "Host": f"rebind.example:{_port(ccm)}"}
    status, answer = ccm.request("POST", "api/control", body, foreign)
    assert status == 403
    assert "rebind.example" in _error(answer) and "\n" not in _error(answer)
    assert ccm.state()["set_speed_kph"] == 90.0


def test_the_state_and_the_page_naming_another_host_are_refused(ccm: Page) -> None:
    foreign = {"Host": f"rebind.example:{_port(ccm)}"}
    assert ccm.request("GET", "api/state", headers=foreign)[0] == 403
    assert ccm.request("GET", "", headers=foreign)[0] == 403


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "[::1]", "LocalHost"])
def test_on_loopback_the_loopback_names_reach_the_node(ccm: Page, name: str) -> None:
    status, body = ccm.request("GET", "api/state", headers={"Host": f"{name}:{_port(ccm)}"})
    assert status == 200, body


def test_a_control_from_another_sites_page_is_refused_and_changes_nothing(ccm: Page) -> None:
    body = json.dumps({"set_speed_kph": 60}).encode()
    status, answer = ccm.request("POST", "api/control", body, {**JSON, "Origin": "http://evil.example"})
    assert status == 403
    assert "evil.example" in _error(answer)
    assert ccm.state()["set_speed_kph"] == 90.0


def test_a_control_from_another_port_of_the_same_host_is_refused(ccm: Page) -> None:
    """Another port is another origin: a second server on this host is another site."""
    body = json.dumps({"set_speed_kph": 60}).encode()
    origin = f"http://127.0.0.1:{_port(ccm) + 1}"
    assert ccm.request("POST", "api/control", body, {**JSON, "Origin": origin})[0] == 403
    assert ccm.state()["set_speed_kph"] == 90.0


def test_a_control_from_the_nodes_own_page_is_applied(ccm: Page) -> None:
    origin = f"http://127.0.0.1:{_port(ccm)}"
    status, answer = ccm.control({"set_speed_kph": 70}, {"Origin": origin})
    assert status == 200, answer
    ccm.state_when(lambda s: s["set_speed_kph"] == 70.0)


async def _upgrade(url: str, origin: str | None) -> int:
    """The status of a WebSocket handshake (101 when upgraded), with ``origin`` if given."""
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(url + "api/ws", origin=origin) as socket:
                message = await socket.receive(timeout=HANG_S)
                assert "history" in json.loads(message.data)
                return 101
        except aiohttp.WSServerHandshakeError as refused:
            return int(refused.status)


def test_a_websocket_from_another_sites_page_is_not_upgraded(ccm: Page) -> None:
    assert asyncio.run(_upgrade(ccm.url, "http://evil.example")) == 403


def test_a_websocket_from_the_nodes_own_page_is_upgraded(ccm: Page) -> None:
    assert asyncio.run(_upgrade(ccm.url, f"http://127.0.0.1:{_port(ccm)}")) == 101


def test_a_name_in_web_allowed_hosts_reaches_the_node(
        start: Callable[..., Node], udp: Udp, tmp_path: Path) -> None:
    config = tmp_path / "web.ini"
    config.write_text("[run]\nweb = 127.0.0.1:0\nweb_allowed_hosts = ecu.lab, proxy.example\n")
    page = Page(start(*udp.args(), "--config", str(config)))
    assert page.request("GET", "api/state", headers={"Host": f"proxy.example:{_port(page)}"})[0] == 200
    assert page.request("GET", "api/state", headers={"Host": f"other.example:{_port(page)}"})[0] == 403


def test_off_loopback_a_foreign_host_is_refused_even_with_the_token(
        lan_node: tuple[Page, str, list[str]]) -> None:
    page, token, machine = lan_node
    headers = {**JSON, "Authorization": f"Bearer {token}", "Host": "rebind.example:8080"}
    assert on_machine(machine, "POST", page.url + "api/control", headers, {"pedal_override": 10}) == 403
    assert on_machine(machine, "GET", page.url + "api/state", {"Host": "rebind.example:8080"}) == 403
    assert state_on(machine, page.url)["pedal_override_pct"] is None


def test_off_loopback_a_foreign_origin_is_refused_even_with_the_token(
        lan_node: tuple[Page, str, list[str]]) -> None:
    page, token, machine = lan_node
    headers = {**JSON, "Authorization": f"Bearer {token}", "Origin": "http://evil.example"}
    assert on_machine(machine, "POST", page.url + "api/control", headers, {"pedal_override": 10}) == 403
    assert state_on(machine, page.url)["pedal_override_pct"] is None
    own = {**JSON, "Authorization": f"Bearer {token}", "Origin": "http://10.74.163.1:8080"}
    assert on_machine(machine, "POST", page.url + "api/control", own, {"pedal_override": 10}) == 200
