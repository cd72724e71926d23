"""The node the page's tests reach off loopback, where the token is on."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.conftest import Node
from tests.helpers.webnode import Page


@pytest.fixture
def lan_node(machine: list[str], start: Callable[..., Node]) -> Iterator[tuple[Page, str, list[str]]]:
    """An ECU on a machine of its own, its page on the machine's LAN address; the token it logged;
    the prefix that runs a client on that machine."""
    node = start("--web", "10.74.163.1:8080", "--profile", "j1939", inside=machine)
    token = node.wait_for(r"need the token (\S+) ").group(1)
    yield Page(node), token, machine
