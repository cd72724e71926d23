"""The default bus stays on this machine; the LAN only on request, and said so.

Two machines are two network namespaces joined by a veth pair, each with its own loopback and a
default route over the pair, as two hosts on one office network. Every process there uses the
default group and port, untouched by other tests on this host (each namespace has its own ports).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator

import can
import pytest

from ecu_sim.bus.hostlocal import HostLocalUdpMulticastBus
from tests.conftest import Cli, Node, Udp, summary_of

ECU_STATUS = r"speed +\d+\.\d+ km/h \| APP "
LAN = ("--bus-kwargs", "hop_limit=1")


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def two_machines() -> Iterator[tuple[list[str], list[str]]]:
    """The command prefixes that run a process on machine A and on machine B."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 to make network namespaces")
    tag = uuid.uuid4().hex[:6]
    names = (f"ecusim-{tag}-a", f"ecusim-{tag}-b")
    links = (f"esa{tag}", f"esb{tag}")
    try:
        for name in names:
            ip("netns", "add", name)
        ip("link", "add", links[0], "netns", names[0], "type", "veth", "peer", "name", links[1],
           "netns", names[1])
        for number, (name, link) in enumerate(zip(names, links, strict=True), start=1):
            ip("-n", name, "addr", "add", f"10.74.163.{number}/24", "dev", link)
            ip("-n", name, "link", "set", link, "up")
            ip("-n", name, "link", "set", "lo", "up")
            ip("-n", name, "route", "add", "default", "dev", link)
        yield (["ip", "netns", "exec", names[0]], ["ip", "netns", "exec", names[1]])
    finally:
        for name in names:
            subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)


def ecu_on_a_and_ccm_on_b(start: Callable[..., Node], machines: tuple[list[str], list[str]],
                          *bus: str) -> tuple[Node, Node]:
    """An ECU running on A, and a CCM that ran its course on B while the ECU sent."""
    a, b = machines
    ecu = start(*bus, inside=a)
    ecu.wait_for(ECU_STATUS)
    ccm = start("ccm", *bus, "--duration", "2", inside=b)
    assert ccm.wait() == 0, ccm.log
    assert ecu.stop() == 0, ecu.log
    return ecu, ccm


@pytest.mark.slow
def test_nodes_on_the_default_bus_of_two_machines_never_hear_each_other(
        start: Callable[..., Node], two_machines: tuple[list[str], list[str]]) -> None:
    ecu, ccm = ecu_on_a_and_ccm_on_b(start, two_machines)
    assert (summary_of(ecu.log).rx, summary_of(ccm.log).rx) == (0, 0), ecu.log + ccm.log


@pytest.mark.slow
def test_a_hop_limit_of_one_joins_two_machines_on_purpose(
        start: Callable[..., Node], two_machines: tuple[list[str], list[str]]) -> None:
    ecu, ccm = ecu_on_a_and_ccm_on_b(start, two_machines, *LAN)
    assert summary_of(ecu.log).rx > 0 and summary_of(ccm.log).rx > 0, ecu.log + ccm.log


@pytest.mark.slow
def test_a_node_on_the_lan_says_so_in_its_log(
        start: Callable[..., Node], two_machines: tuple[list[str], list[str]]) -> None:
    ecu, _ = ecu_on_a_and_ccm_on_b(start, two_machines, *LAN)
    assert "frames go to other machines on the network and theirs are accepted" in ecu.log


def test_the_first_line_names_the_group_and_port_and_that_the_bus_stays_on_this_host(
        cli_main: Cli, virtual_time: None, udp: Udp) -> None:
    result = cli_main(*udp.args(), "--duration", "0.1")
    assert result.status == 0, result.err
    first = result.err.splitlines()[0]
    assert f"ECU on udp_multicast group {udp.group} port {udp.port} (this host only)" in first


@pytest.mark.slow
def test_the_default_bus_opens_on_a_machine_without_a_network(
        start: Callable[..., Node], two_machines: tuple[list[str], list[str]]) -> None:
    a, _ = two_machines
    subprocess.run([*a, "ip", "route", "del", "default"], check=True)
    ecu = start("--duration", "0.5", inside=a)
    assert ecu.wait() == 0, ecu.log


def _received(bus: can.BusABC, wait_s: float = 2.0) -> list[can.Message]:
    """Every frame ``bus`` receives until it has been quiet for a moment (at most ``wait_s``)."""
    frames: list[can.Message] = []
    while (msg := bus.recv(wait_s if not frames else 0.2)) is not None:
        frames.append(msg)
    return frames


def test_a_host_local_node_does_not_hear_its_own_frames(udp: Udp) -> None:
    with udp.bus() as node, udp.bus() as other:
        node.send(can.Message(arbitration_id=0x18FEF100, data=b"ours"))
        assert [bytes(m.data) for m in _received(other)] == [b"ours"], "the others hear it"
        assert _received(node, 0.3) == []


def test_a_host_local_node_that_asks_hears_its_own_frames(udp: Udp) -> None:
    with HostLocalUdpMulticastBus(channel=udp.group, port=udp.port, receive_own_messages=True) as node:
        assert node.own_frames_come_back
        node.send(can.Message(arbitration_id=0x18FEF100, data=b"ours"))
        assert [bytes(m.data) for m in _received(node)] == [b"ours"]


def test_a_node_still_hears_others_that_send_its_identifier_and_payload(udp: Udp) -> None:
    with udp.bus() as node, udp.bus() as twin:
        node.send(can.Message(arbitration_id=0x18FEF100, data=b"same"))
        twin.send(can.Message(arbitration_id=0x18FEF100, data=b"same"))
        assert [bytes(m.data) for m in _received(node)] == [b"same"]


def test_a_read_without_waiting_passes_over_frames_the_filters_reject(udp: Udp) -> None:
    wanted = {"can_id": 0x18FEF100, "can_mask": 0x1FFFFFFF, "extended": True}
    with HostLocalUdpMulticastBus(channel=udp.group, port=udp.port, can_filters=[wanted]) as node, \
            udp.bus() as other:
        for ident in (0x18FF5000, 0x18FF5100, 0x18FEF100):
            other.send(can.Message(arbitration_id=ident, data=b"x"))
        time.sleep(0.2)  # loopback delivers within the send; a moment more for a loaded machine
        msg = node.recv(0.0)
        assert msg is not None and msg.arbitration_id == 0x18FEF100, "one read, past both rejected"
