"""A vcan of one's own: created for one piece of work and deleted after it, whatever happened.

A campaign on SocketCAN gives each case such an interface, so cases run side by side without
hearing each other, as the host-local ``udp_multicast`` groups do elsewhere. The name is drawn at
random under a fixed prefix, so a leftover of a killed campaign is easy to tell and to delete.
"""

from __future__ import annotations

import errno
import importlib
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from ecu_sim.errors import errno_of
from ecu_sim.link.apply import delete, ensure_vcan
from ecu_sim.link.errors import LinkError

#: every private vcan's name starts so; the rest is random hex, within the kernel's 15 characters
PREFIX = "ecsim"


def socketcan_problem() -> str | None:
    """Why this host cannot make private vcans, or None: checked before any case runs."""
    try:
        probe = socket.socket(socket.PF_CAN, socket.SOCK_RAW, socket.CAN_RAW)
    except (OSError, AttributeError) as exc:
        detail = "no PF_CAN" if errno_of(exc) == errno.EAFNOSUPPORT else str(exc)
        return f"this kernel has no SocketCAN ({detail})"
    probe.close()
    try:
        importlib.import_module("pyroute2")
    except ImportError:
        return "pyroute2 is not installed (pip install 'ecu-sim[link]')"
    return None


def new_name() -> str:
    return PREFIX + secrets.token_hex(5)


@contextmanager
def private_vcan() -> Iterator[str]:
    """An up vcan no one else uses; deleted on leaving, even when the work failed. LinkError when
    it cannot be made (no CAP_NET_ADMIN, no vcan module), with what to do."""
    name = new_name()
    try:
        ensure_vcan(name)
    except BaseException:
        with suppress(LinkError):
            delete(name)
        raise
    try:
        yield name
    finally:
        delete(name)
