"""Which buses the attacker may send on without being told twice: virtual ones only.

A bench's CAN interface may be wired to a vehicle. The kernel says which SocketCAN interfaces
are virtual (they live under ``/sys/devices/virtual/net``: vcan, vxcan); python-can's
``virtual`` bus never reaches a wire. A ``udp_multicast`` bus stays on this host only without a
hop limit above zero (``bus/hostlocal.py`` decides that, as for every node); with one, its frames
leave the host for the LAN, where another bench's gateway may carry them to a vehicle.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from ecu_sim.bus.hostlocal import is_host_local
from ecu_sim.errors import ConfigError

ALLOW_OPTION = "--allow-real-bus"


def is_virtual(interface: str | None, channel: object, sys_net: str = "/sys/class/net",
               bus_kwargs: dict[str, Any] | None = None) -> bool:
    if interface == "virtual":
        return True
    if interface == "udp_multicast":
        return is_host_local(interface, bus_kwargs or {})
    if interface == "socketcan" and isinstance(channel, str) and channel:
        real = os.path.realpath(os.path.join(sys_net, channel))
        return os.path.exists(real) and "/devices/virtual/" in real
    return False


def check_bus(options: argparse.Namespace, allowed: bool) -> None:
    """ConfigError unless the bus is virtual or the user said ``--allow-real-bus``."""
    interface, channel = getattr(options, "interface", None), getattr(options, "channel", None)
    bus_kwargs = getattr(options, "bus_kwargs", None) or {}
    if not allowed and not is_virtual(interface, channel, bus_kwargs=bus_kwargs):
        raise ConfigError(f"refusing to attack {interface} {channel}: it is not a virtual bus (vcan, "
                          "udp_multicast kept on this host, virtual) and may reach a vehicle; give "
                          f"{ALLOW_OPTION} "
                          "if it is a bench you may disturb")
