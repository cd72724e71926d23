"""Putting a node's frame on the bus once a tick: from user space, or timed by the kernel.

Every interface gets :class:`Transmitter`, which sends from the loop. On SocketCAN the default is
the kernel's broadcast manager (:mod:`ecu_sim.bus.kernel`), which sends on its own timer, so the
period on the wire does not depend on Python being scheduled on time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import can

from ecu_sim.bus.port import Port
from ecu_sim.errors import ConfigError

#: Builds the frame of one send: (arbitration_id, data, is_extended_id) -> Message.
FrameFactory = Callable[[int, bytes, bool], can.Message]


def new_message(arbitration_id: int, data: bytes, is_extended_id: bool) -> can.Message:
    return can.Message(arbitration_id=arbitration_id, data=data, is_extended_id=is_extended_id,
                       check=False)


class Output(Protocol):
    """Where a node's payload goes each tick: a transmitter, or a fault injector in front of one."""

    def send(self, tick: int, deadline: float, data: bytes) -> None:
        """Send ``data`` as the frame of tick ``tick``, whose deadline on the loop's clock is ``deadline``."""


class Transmitter:
    """Sends one message of the node each tick, from user space (works on every interface)."""

    def __init__(self, port: Port, arbitration_id: int, is_extended_id: bool,
                 new_frame: FrameFactory = new_message) -> None:
        self._port = port
        self._arbitration_id = arbitration_id
        self._is_extended_id = is_extended_id
        self._new_frame = new_frame
        self._send = port.send

    def send(self, tick: int, deadline: float, data: bytes) -> None:
        self._send(self._new_frame(self._arbitration_id, data, self._is_extended_id))


def uses_kernel_timer(port: Port, mode: str) -> bool:
    """``auto`` uses the kernel's broadcast manager on SocketCAN and user space elsewhere."""
    socketcan_bus = str(getattr(port.bus, "channel_info", "")).startswith("socketcan")
    if mode == "kernel" and not socketcan_bus:
        raise ConfigError("--tx-mode kernel needs a SocketCAN interface (e.g. --iface can1); "
                          "other interfaces send from the loop: use --tx-mode auto or user")
    return socketcan_bus and mode in ("auto", "kernel")
