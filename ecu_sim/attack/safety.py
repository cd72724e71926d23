"""Which buses the attacker may send on without being told twice: virtual ones only.

A bench's CAN interface may be wired to a vehicle. The kernel says which SocketCAN interfaces
are virtual (they live under ``/sys/devices/virtual/net``: vcan, vxcan); python-can's
``virtual`` and ``udp_multicast`` buses never reach a wire.
"""

from __future__ import annotations

import argparse
import os

from ecu_sim.errors import ConfigError

#: python-can interfaces that carry frames between processes only
VIRTUAL_INTERFACES = ("virtual", "udp_multicast")
ALLOW_OPTION = "--allow-real-bus"


def is_virtual(interface: str | None, channel: object, sys_net: str = "/sys/class/net") -> bool:
    if interface in VIRTUAL_INTERFACES:
        return True
    if interface == "socketcan" and isinstance(channel, str) and channel:
        real = os.path.realpath(os.path.join(sys_net, channel))
        return os.path.exists(real) and "/devices/virtual/" in real
    return False


def check_bus(options: argparse.Namespace, allowed: bool) -> None:
    """ConfigError unless the bus is virtual or the user said ``--allow-real-bus``."""
    interface, channel = getattr(options, "interface", None), getattr(options, "channel", None)
    if not allowed and not is_virtual(interface, channel):
        raise ConfigError(f"refusing to attack {interface} {channel}: it is not a virtual bus (vcan, "
                          f"udp_multicast, virtual) and may reach a vehicle; give {ALLOW_OPTION} "
                          "if it is a bench you may disturb")
