"""What the role processes (``python -m bench.actors ROLE``) share with each other and with the
run that starts them: the multicast group, the identifiers no node sends, the bus as ecu-sim
opens it, and the signal that ends a role.

Nothing here imports ecu-sim at the top, nor may the role modules: ``startup-steps`` times
ecu-sim's imports in a fresh process, which an earlier import would hide.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

GROUP = "239.74.163.2"
#: identifiers of the flood: proprietary-B PGNs 0xFF50..0xFF5F from source 0xF0, matching no role
FLOOD_IDS = tuple(0x18FF50F0 + (i << 8) for i in range(16))
#: the python-can send_periodic baseline's identifier (its own bus; any identifier would do)
PERIODIC_ID = 0x18FEF1B1


class Stop:
    """Set by SIGTERM/SIGINT; roles poll it or wait on it."""

    def __init__(self) -> None:
        self.event = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda signum, frame: self.event.set())

    def __bool__(self) -> bool:
        return self.event.is_set()


def udp_bus(port: int, **kwargs: Any) -> Any:
    """The nodes' default bus: udp_multicast kept on this host, as ecu-sim opens it."""
    from ecu_sim.bus.hostlocal import HostLocalUdpMulticastBus

    return HostLocalUdpMulticastBus(channel=GROUP, port=port, **kwargs)
