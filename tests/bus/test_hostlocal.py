"""The default bus reaches every process of this host, never another machine; the LAN only on
request, and said so.

Machines are network namespaces (tests/conftest.py, ``two_machines``). The other side of the bus
is sometimes a stock python-can program (tests/helpers/python_can_peer.py), which joins and sends on the
default route's interface with a hop limit of one, as python-can does.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import can
import pytest
from can.interfaces.udp_multicast.utils import pack_message

from ecu_sim.bus.hostlocal import HostLocalUdpMulticastBus
from tests.conftest import HANG_S, Cli, Node, Udp, clean_env, first_line, private_udp, summary_of

ECU_STATUS = r"speed +\d+\.\d+ km/h \| APP "
LAN = ("--bus-kwargs", "hop_limit=1")


class PythonCan:
    """A stock python-can program (tests/helpers/python_can_peer.py) as a process, started on its event."""

    def __init__(self, udp: Udp, *mode: str, inside: Sequence[str] = ()) -> None:
        peer = Path(__file__).resolve().parents[1] / "helpers" / "python_can_peer.py"
        self.process = subprocess.Popen([*inside, sys.executable, str(peer), udp.group, str(udp.port), *mode],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                                        env=clean_env())
        opened = first_line(self.process).strip()
        assert opened in ("sending", "listening"), f"python-can did not open its bus: {opened!r}"

    def heard(self) -> int:
        """A listener's count of frames, once it has them all (or gave up)."""
        out, _ = self.process.communicate(timeout=HANG_S)
        return int(out)

    def stop(self) -> int:
        """A listener's count of frames until now: it is told to stop (SIGTERM)."""
        self.process.terminate()
        return self.heard()

    def kill(self) -> None:
        self.process.kill()
        self.process.communicate(timeout=HANG_S)


@pytest.fixture
def python_can() -> Iterator[Callable[..., PythonCan]]:
    """``python_can(udp, mode...)`` starts the stock python-can program; killed at the end."""
    peers: list[PythonCan] = []

    def launch(udp: Udp, *mode: str, inside: Sequence[str] = ()) -> PythonCan:
        peers.append(PythonCan(udp, *mode, inside=inside))
        return peers[-1]

    try:
        yield launch
    finally:
        for peer in peers:
            if peer.process.poll() is None:
                peer.kill()


FAMILIES = pytest.mark.parametrize("ipv6", [False, True], ids=["IPv4", "IPv6"])


@pytest.mark.slow
@FAMILIES
@pytest.mark.parametrize("hop_limit", [(), ("--hop-limit", "0")],
                         ids=["python-can's defaults", "hop limit 0"])
def test_ecu_sim_on_the_default_bus_hears_a_stock_python_can_program_of_this_host(
        start: Callable[..., Node], python_can: Callable[..., PythonCan], machine: list[str], ipv6: bool,
        hop_limit: tuple[str, ...]) -> None:
    udp = private_udp(ipv6)
    python_can(udp, "send", *hop_limit, inside=machine)
    ccm = start("ccm", *udp.args(), "--duration", "2", inside=machine)
    assert ccm.wait() == 0, ccm.log
    assert summary_of(ccm.log).rx > 0, ccm.log


@pytest.mark.slow
@FAMILIES
def test_a_stock_python_can_program_of_this_host_hears_ecu_sim_on_the_default_bus(
        start: Callable[..., Node], python_can: Callable[..., PythonCan], machine: list[str],
        ipv6: bool) -> None:
    udp = private_udp(ipv6)
    listener = python_can(udp, "listen", "5", inside=machine)
    ecu = start(*udp.args(), "--duration", "2", inside=machine)
    assert ecu.wait() == 0, ecu.log
    assert listener.heard() == 5


@pytest.mark.slow
@FAMILIES
def test_a_stock_python_can_program_on_another_machine_is_not_heard_on_the_default_bus(
        start: Callable[..., Node], python_can: Callable[..., PythonCan],
        two_machines: tuple[list[str], list[str]], ipv6: bool) -> None:
    a, b = two_machines
    udp = private_udp(ipv6)
    witness = python_can(udp, "listen", "5", inside=a)  # python-can on A: the frames do arrive
    python_can(udp, "send", inside=b)
    ccm = start("ccm", *udp.args(), "--duration", "2", inside=a)
    assert ccm.wait() == 0, ccm.log
    assert witness.heard() == 5, "the frames of machine B never reached machine A"
    assert summary_of(ccm.log).rx == 0, ccm.log


@pytest.mark.slow
@FAMILIES
def test_ecu_sims_frames_on_the_default_bus_never_reach_a_stock_python_can_program_on_another_machine(
        start: Callable[..., Node], python_can: Callable[..., PythonCan],
        two_machines: tuple[list[str], list[str]], ipv6: bool) -> None:
    a, b = two_machines
    udp = private_udp(ipv6)
    listener = python_can(udp, "listen", inside=b)
    ecu = start(*udp.args(), "--duration", "2", inside=a)
    assert ecu.wait() == 0, ecu.log
    assert listener.stop() == 0


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


#: the default group, and an IPv6 one, which sends on a real interface (see ecu_sim.bus.hostlocal)
GROUPS = pytest.mark.parametrize("group", [(), ("-i", "udp_multicast", "-c", "ff15::ec:1")],
                                 ids=["default group", "IPv6 group"])


@pytest.mark.slow
@GROUPS
def test_nodes_on_the_default_bus_of_two_machines_never_hear_each_other(
        start: Callable[..., Node], two_machines: tuple[list[str], list[str]],
        group: tuple[str, ...]) -> None:
    ecu, ccm = ecu_on_a_and_ccm_on_b(start, two_machines, *group)
    assert (summary_of(ecu.log).rx, summary_of(ccm.log).rx) == (0, 0), ecu.log + ccm.log


@pytest.mark.slow
@GROUPS
def test_a_hop_limit_of_one_joins_two_machines_on_purpose(
        start: Callable[..., Node], two_machines: tuple[list[str], list[str]],
        group: tuple[str, ...]) -> None:
    ecu, ccm = ecu_on_a_and_ccm_on_b(start, two_machines, *group, *LAN)
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


@pytest.mark.slow
def test_an_ipv6_group_on_a_machine_without_a_link_exits_69_saying_to_use_an_ipv4_group(
        start: Callable[..., Node], two_machines: tuple[list[str], list[str]]) -> None:
    a, _ = two_machines
    every_link_down = "for link in $(ls /sys/class/net); do [ $link = lo ] || ip link set $link down; done"
    subprocess.run([*a, "sh", "-c", every_link_down], check=True)
    ecu = start("-i", "udp_multicast", "-c", "ff15::ec:1", "--duration", "0.5", inside=a)
    assert ecu.wait() == 69, ecu.log
    assert "needs a network interface with a link" in ecu.log and "use an IPv4 group" in ecu.log
    assert "Traceback" not in ecu.log and "not properly shut down" not in ecu.log


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


def test_a_node_does_not_hear_another_group_on_its_port(udp: Udp) -> None:
    neighbour = Udp(private_udp().group, udp.port)
    with udp.bus() as node, neighbour.bus() as sender, neighbour.bus() as listener:
        sender.send(can.Message(arbitration_id=0x18FEF100, data=b"theirs"))
        assert [bytes(m.data) for m in _received(listener)] == [b"theirs"], "their group hears it"
        assert _received(node, 0.3) == []


def test_a_unicast_datagram_to_the_port_is_not_a_frame(udp: Udp) -> None:
    frame = pack_message(can.Message(arbitration_id=0x18FEF100, data=b"direct"))
    with udp.bus() as node, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        sender.sendto(frame, ("127.0.0.1", udp.port))
        assert _received(node, 0.3) == []


def test_a_read_without_waiting_passes_over_frames_the_filters_reject(udp: Udp) -> None:
    wanted = {"can_id": 0x18FEF100, "can_mask": 0x1FFFFFFF, "extended": True}
    with HostLocalUdpMulticastBus(channel=udp.group, port=udp.port, can_filters=[wanted]) as node, \
            udp.bus() as other:
        for ident in (0x18FF5000, 0x18FF5100, 0x18FEF100):
            other.send(can.Message(arbitration_id=ident, data=b"x"))
        time.sleep(0.2)  # loopback delivers within the send; a moment more for a loaded machine
        msg = node.recv(0.0)
        assert msg is not None and msg.arbitration_id == 0x18FEF100, "one read, past both rejected"
