"""Who may take the node's recording, and how many are made at once: through real ``ecu-sim``
processes and their HTTP API.

A download makes its recording in a process of its own: it needs the token wherever the controls
do (off loopback), is refused from another site's page on loopback and off it, and is made one
at a time, a request meanwhile answered at once with when to ask again. "No recording made" is
read from the node's log, which names each one it starts making, once the node stopped.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.conftest import Node, Udp
from tests.helpers.webnode import Page, at_once_on, on_machine, recordings_made

pytestmark = pytest.mark.slow
pytest.importorskip("aiohttp", reason="the web extra (aiohttp) is not installed")

JSON = {"Content-Type": "application/json"}
#: what a browser sends for another site's <img> or no-cors fetch of the download: no Origin
FOREIGN_PAGES = [{"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"},
                 {"Referer": "http://evil.example/page.html"}, {"Origin": "http://evil.example"}]

LanNode = tuple[Page, str, list[str]]


def _named(headers: dict[str, str]) -> str:
    return "-".join(f"{name}:{value}" for name, value in headers.items())


def _recorded(page: Page, token: str, machine: list[str]) -> None:
    """A recording started and stopped with the token, from inside the machine."""
    with_token = {**JSON, "Authorization": f"Bearer {token}"}
    for action in ("start", "stop"):
        assert on_machine(machine, "POST", page.url + "api/control", with_token, {"record": action}) == 200


def test_off_loopback_the_recording_without_the_token_is_refused_and_none_is_made(lan_node: LanNode) -> None:
    page, token, machine = lan_node
    _recorded(page, token, machine)
    download = page.url + "api/recording"
    assert on_machine(machine, "GET", download, {}) == 401
    assert on_machine(machine, "GET", download, {"Authorization": "Bearer wrong"}) == 401
    assert on_machine(machine, "GET", f"{download}?token=wrong", {}) == 401
    assert recordings_made(page.node) == 0


def test_off_loopback_the_recording_with_the_token_is_made_once(lan_node: LanNode) -> None:
    page, token, machine = lan_node
    _recorded(page, token, machine)
    assert on_machine(machine, "GET", f"{page.url}api/recording?token={token}", {}) == 200
    assert recordings_made(page.node) == 1


@pytest.mark.parametrize("sent", FOREIGN_PAGES, ids=_named)
def test_off_loopback_the_recording_from_another_sites_page_is_refused_even_with_the_token(
        lan_node: LanNode, sent: dict[str, str]) -> None:
    page, token, machine = lan_node
    _recorded(page, token, machine)
    assert on_machine(machine, "GET", page.url + "api/recording",
                      {"Authorization": f"Bearer {token}", **sent}) == 403
    assert recordings_made(page.node) == 0


def test_twenty_downloads_at_once_make_one_recording_and_the_others_are_told_when_to_ask_again(
        lan_node: LanNode) -> None:
    page, token, machine = lan_node
    _recorded(page, token, machine)
    answers = at_once_on(machine, page.node, page.url + "api/recording",
                         {"Authorization": f"Bearer {token}"}, 20)
    assert sorted(status for status, _ in answers) == [200] + [503] * 19
    assert all(retry is not None and int(retry) >= 1 for status, retry in answers if status == 503)
    assert recordings_made(page.node) == 1


def test_a_download_after_the_one_being_made_is_made_again(lan_node: LanNode) -> None:
    """The refusal lasts while the recording is being made, not after it."""
    page, token, machine = lan_node
    _recorded(page, token, machine)
    url = f"{page.url}api/recording?token={token}"
    assert [on_machine(machine, "GET", url, {}) for _ in range(2)] == [200, 200]
    assert recordings_made(page.node) == 2


@pytest.fixture
def ccm(start: Callable[..., Node], udp: Udp) -> Page:
    """A CCM alone with its page on loopback (no token), a recording started and stopped."""
    page = Page(start("ccm", *udp.args(), "--web", "127.0.0.1:0"))
    for action in ("start", "stop"):
        assert page.control({"record": action})[0] == 200
    return page


@pytest.mark.parametrize("sent", FOREIGN_PAGES, ids=_named)
def test_on_loopback_the_recording_from_another_sites_page_is_refused_and_none_is_made(
        ccm: Page, sent: dict[str, str]) -> None:
    status, body = ccm.request("GET", "api/recording", headers=sent)
    assert status == 403
    assert "another site" in json.loads(body)["error"]
    assert recordings_made(ccm.node) == 0


def test_on_loopback_the_recording_from_the_nodes_own_page_needs_no_token(ccm: Page) -> None:
    own = {"Sec-Fetch-Site": "same-origin", "Referer": ccm.url}
    assert ccm.request("GET", "api/recording", headers=own)[0] == 200
    assert recordings_made(ccm.node) == 1
