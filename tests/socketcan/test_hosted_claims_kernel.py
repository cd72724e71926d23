"""A recording run of the whole truck on a real vcan0, heard by the Linux kernel's J1939 stack:
each node the process hosts (the powertrain's four, the cluster DBC's tachograph and body
controller, the FMS gateway) claims its address once, and no node claims again because it took
its own frames for another sender's. A CAN_J1939 socket reads every Address Claimed for the whole
run; only counts are asserted, never the clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.socketcan.conftest import Node, create_vcan, delete_link
from tests.socketcan.test_j1939_kernel import CLAIMED, KernelClient

pytestmark = pytest.mark.socketcan

IFACE = "vcan0"
LISTENER = 0xC0
HOSTED = (0x00, 0x03, 0x0B, 0x0F, 0xEE, 0x21, 0x4A)
CLUSTER = REPO / "examples" / "restbus" / "cluster.dbc"
#: a process under emulation may take a minute to start: only a guard against a hang
HANG_S = 300.0


def claims_heard(listener: KernelClient, running: Callable[[], bool]) -> Counter[int]:
    """Address Claimed by source, read while ``running()`` and then to the last one queued: read
    all along, since a full socket buffer would drop frames."""
    claims: Counter[int] = Counter()
    listener.sock.settimeout(0.5)
    while True:
        alive = running()
        try:
            _, (_, _, pgn, source) = listener.sock.recvfrom(1785)
        except TimeoutError:
            if alive:
                continue
            return claims
        if pgn == CLAIMED:
            claims[source] += 1


def test_each_hosted_node_claims_once_in_a_recorded_run(tmp_path: Path) -> None:
    create_vcan(IFACE)
    listener = KernelClient(IFACE, LISTENER)  # bound before the node starts: it hears the first claims
    try:
        ecu = Node(["--iface", IFACE, "--vehicle", "class6", "--profile", "j1939", "--network", "powertrain",
                    "--fms", "--restbus", str(CLUSTER), "--grade", "0", "--duration", "6",
                    "--record", str(tmp_path / "rb.log")], tmp_path / "ecu.log")
        claims = claims_heard(listener, ecu.process.is_alive)
        ecu.process.join(HANG_S)
        assert ecu.process.exitcode == 0, ecu.log()[-3000:]
        assert dict(claims) == dict.fromkeys(HOSTED, 1), ecu.log()[-3000:]
        assert "address violations" not in ecu.log()
    finally:
        listener.close()
        delete_link(IFACE)
