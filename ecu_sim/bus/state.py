"""The CAN controller's fault-confinement state, one vocabulary for error frames and netlink.

SocketCAN reports the state two ways: error frames on a raw socket (the port watches those) and
``IFLA_CAN_STATE`` over netlink (``ecu-sim link --show`` reads that). Both map onto
:class:`ControllerState`, so the status line and the link report speak the same words. This module
imports no CAN library: ``ecu-sim link`` uses it without python-can's start-up cost.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import can


class ControllerState(enum.Enum):
    """enum can_state of linux/can/netlink.h, with the words ``ip -d link`` prints for it."""

    ERROR_ACTIVE = "error-active"
    ERROR_WARNING = "error-warning"
    ERROR_PASSIVE = "error-passive"
    BUS_OFF = "bus-off"
    STOPPED = "stopped"
    SLEEPING = "sleeping"

    @classmethod
    def from_kernel(cls, number: int) -> ControllerState | None:
        """The state for the number the kernel sends in ``IFLA_CAN_STATE``; None for one unknown."""
        members = list(cls)
        return members[number] if 0 <= number < len(members) else None


#: Error classes of a SocketCAN error frame (linux/can/error.h), in the bits of its identifier.
ERROR_CLASSES: tuple[tuple[int, str], ...] = (
    (0x001, "tx_timeout"), (0x002, "arbitration_lost"), (0x004, "controller"),
    (0x008, "protocol"), (0x010, "transceiver"), (0x020, "no_ack"), (0x040, "bus_off"),
    (0x080, "bus_error"), (0x100, "restarted"), (0x200, "counters"),
)
#: linux/can/error.h: the error classes that carry the controller's state
CAN_ERR_CRTL = 0x004
CAN_ERR_BUSOFF = 0x040
CAN_ERR_RESTARTED = 0x100
#: data[1] of a CAN_ERR_CRTL error frame: the state the controller has just entered
CAN_ERR_CRTL_RX_WARNING = 0x04
CAN_ERR_CRTL_TX_WARNING = 0x08
CAN_ERR_CRTL_RX_PASSIVE = 0x10
CAN_ERR_CRTL_TX_PASSIVE = 0x20
CAN_ERR_CRTL_ACTIVE = 0x40


def error_classes(msg: can.Message) -> list[str]:
    """The names of the classes an error frame reports, ``unspecified`` when it sets none."""
    return [name for bit, name in ERROR_CLASSES if msg.arbitration_id & bit] or ["unspecified"]


def state_from_error_frame(msg: can.Message) -> ControllerState | None:
    """The state an error frame reports the controller to be in now; None when it reports none.

    The kernel sends CAN_ERR_BUSOFF on bus-off, CAN_ERR_RESTARTED after a restart, and on any
    other change CAN_ERR_CRTL with data[1] naming the new state of the receive and transmit sides.
    """
    can_id = msg.arbitration_id
    if can_id & CAN_ERR_BUSOFF:
        return ControllerState.BUS_OFF
    if can_id & CAN_ERR_CRTL and len(msg.data) > 1:
        status = msg.data[1]
        if status & (CAN_ERR_CRTL_RX_PASSIVE | CAN_ERR_CRTL_TX_PASSIVE):
            return ControllerState.ERROR_PASSIVE
        if status & (CAN_ERR_CRTL_RX_WARNING | CAN_ERR_CRTL_TX_WARNING):
            return ControllerState.ERROR_WARNING
        if status & CAN_ERR_CRTL_ACTIVE:
            return ControllerState.ERROR_ACTIVE
    if can_id & CAN_ERR_RESTARTED:
        return ControllerState.ERROR_ACTIVE
    return None
