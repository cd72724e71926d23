"""The netlink side of ``ecu-sim link``: read an interface, carry out a plan, and nothing else.

This talks rtnetlink through pyroute2 instead of running ``ip``: on a board the ``ip`` in PATH may be
busybox's, which knows nothing of ``type can``, and its error text is not something we can turn into
advice.  Every kernel refusal leaves here as a :class:`~ecu_sim.link.errors.LinkError` saying what to do.

pyroute2 is an optional extra (``pip install 'ecu-sim[link]'``) and is imported only when a function
here is called, so the simulator itself still runs on an image where the link is set up by systemd-networkd.
"""

from __future__ import annotations

import errno
import importlib
import os
import socket
import struct
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from ecu_sim.errors import errno_of, missing_interface_hint, needs_extra
from ecu_sim.link.errors import LinkError, LinkNotFoundError, translate_error
from ecu_sim.link.plan import (
    LinkSettings,
    Plan,
    check_name,
    check_settings,
    plan_configure,
    plan_restart,
    plan_vcan,
)
from ecu_sim.link.state import LinkState, parse_link


def _pyroute2() -> Any:
    try:
        return importlib.import_module("pyroute2")
    except ImportError as exc:
        raise LinkError(needs_extra("managing CAN links", "pyroute2", "link")) from exc


@contextmanager
def _netlink(name: str, action: str) -> Iterator[Any]:
    """An IPRoute whose refusals come out as advice for ``action`` on ``name``."""
    check_name(name)
    pyroute2 = _pyroute2()
    try:
        with pyroute2.IPRoute() as ipr:
            yield ipr
    except LinkError:
        raise
    except Exception as exc:
        translated = translate_error(exc, name, action)
        if translated is None:
            raise
        raise translated from exc


def _get_message(ipr: Any, name: str) -> Any | None:
    """The RTM_NEWLINK message describing ``name``, or ``None`` when there is no such interface."""
    try:
        messages = list(ipr.link("get", ifname=name))
    except Exception as exc:
        if errno_of(exc) == errno.ENODEV:
            return None
        raise
    return messages[0] if messages else None


def _read(ipr: Any, name: str) -> LinkState:
    message = _get_message(ipr, name)
    if message is None:
        raise LinkNotFoundError(missing_interface_hint(name))
    return parse_link(message)


def _request(change: LinkSettings) -> dict[str, Any]:
    """The settings as pyroute2's keywords for one ``kind="can"`` request."""
    request: dict[str, Any] = {}
    if change.bitrate is not None:
        request["can_bittiming"] = {"bitrate": change.bitrate}
    if change.restart_ms is not None:
        request["can_restart_ms"] = change.restart_ms
    modes = (("berr_reporting", change.berr_reporting), ("listenonly", change.listen_only))
    ctrlmode = {mode: "on" if on else "off" for mode, on in modes if on is not None}
    if ctrlmode:
        request["can_ctrlmode"] = ctrlmode
    return request


def _try_up(ipr: Any, index: int) -> None:
    """Best effort while another error is on its way to the user: that one is what they must see."""
    with suppress(Exception):
        ipr.link("set", index=index, state="up")


def _carry_out(ipr: Any, state: LinkState, plan: Plan, up_action: str) -> None:
    """``up_action`` names the step in the advice if bringing the link up is refused."""
    request = _request(plan.change)
    if plan.take_down:
        ipr.link("set", index=state.index, state="down")
    if request:
        try:
            ipr.link("set", index=state.index, kind="can", **request)
        except Exception:
            if plan.take_down:
                _try_up(ipr, state.index)  # a refused value must not leave a working bus down
            raise
    if plan.bring_up:
        try:
            ipr.link("set", index=state.index, state="up")
        except Exception as exc:
            translated = translate_error(exc, state.name, up_action)
            if translated is None:
                raise
            raise translated from exc


def link_state(name: str) -> LinkState:
    """Read the interface; raises :class:`LinkNotFoundError` when it is not there."""
    with _netlink(name, "read") as ipr:
        return _read(ipr, name)


def ensure_vcan(name: str) -> list[str]:
    """Make ``name`` an up vcan interface; returns what had to be done (empty: it already was)."""
    created: list[str] = []
    with _netlink(name, "create") as ipr:
        message = _get_message(ipr, name)
        if message is None:
            ipr.link("add", ifname=name, kind="vcan")
            created.append("created")
            message = _get_message(ipr, name)
            if message is None:
                raise LinkError(f"created {name} but the kernel does not list it; check `ip link`")
        state = parse_link(message)
        plan = plan_vcan(state)
        _carry_out(ipr, state, plan, up_action="create")
    return created + list(plan.report)


def delete(name: str) -> bool:
    """Delete the interface if it is there; whether it was."""
    with _netlink(name, "delete") as ipr:
        if _get_message(ipr, name) is None:
            return False
        ipr.link("del", ifname=name)
    return True


def configure(name: str, bitrate: int | None = None, restart_ms: int | None = None,
              berr_reporting: bool | None = None, listen_only: bool | None = None) -> list[str]:
    """Apply controller settings and leave the link up; returns what changed (empty: nothing to do).

    Impossible values are refused before the interface is even read, so a bad command line costs
    no netlink round trip and needs no privileges to be told what is wrong.
    """
    wanted = LinkSettings(bitrate, restart_ms, berr_reporting, listen_only)
    check_settings(bitrate, restart_ms)
    with _netlink(name, "configure") as ipr:
        state = _read(ipr, name)
        plan = plan_configure(state, wanted)
        # "up" advice is about missing bit timing, which only a controller can lack
        _carry_out(ipr, state, plan, up_action="up" if state.is_controller else "configure")
    return list(plan.report)


def restart(name: str) -> list[str]:
    """Restart a controller that is bus-off, as ``ip link set NAME type can restart`` does.

    With restart-ms 0 a controller stays bus-off until someone restarts it; this is that someone.
    Returns what was done: empty when the controller is not bus-off (nothing to restart).
    """
    with _netlink(name, "restart") as ipr:
        state = _read(ipr, name)
        if not plan_restart(state):
            return []
        try:
            _restart_request(state.index)
        except OSError as exc:
            if exc.errno == errno.EBUSY:  # it left bus-off between our look and the request
                return []
            raise
    return ["restarted after bus-off"]


# rtnetlink constants, as the kernel's uapi headers define them
_NLMSGHDR = struct.Struct("=IHHII")
_IFINFOMSG = struct.Struct("=BxHiII")
_NLMSG_ERROR = 2
_RTM_NEWLINK = 16
_NLM_F_REQUEST = 0x1
_NLM_F_ACK = 0x4
_IFLA_LINKINFO = 18
_IFLA_INFO_KIND = 1
_IFLA_INFO_DATA = 2
_IFLA_CAN_RESTART = 7


def _nla(kind: int, payload: bytes) -> bytes:
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * (-length % 4)


def restart_message(index: int, seq: int = 1) -> bytes:
    """RTM_NEWLINK with IFLA_CAN_RESTART as a u32, byte for byte what iproute2 sends for ``restart``.

    Built here rather than by pyroute2, which encodes IFLA_CAN_RESTART as a zero-length flag; the
    kernel's policy wants a u32 and refuses the short attribute (ERANGE) before restarting anything.
    """
    data = _nla(_IFLA_CAN_RESTART, struct.pack("=I", 1))
    linkinfo = _nla(_IFLA_INFO_KIND, b"can\0") + _nla(_IFLA_INFO_DATA, data)
    body = _IFINFOMSG.pack(socket.AF_UNSPEC, 0, index, 0, 0) + _nla(_IFLA_LINKINFO, linkinfo)
    header = _NLMSGHDR.pack(_NLMSGHDR.size + len(body), _RTM_NEWLINK, _NLM_F_REQUEST | _NLM_F_ACK, seq, 0)
    return header + body


def _restart_request(index: int) -> None:
    """Send :func:`restart_message` and wait for the kernel's answer; a refusal raises OSError(errno)."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.settimeout(5.0)
        sock.bind((0, 0))
        sock.send(restart_message(index))
        while True:
            reply = sock.recv(65536)
            offset = 0
            while offset + _NLMSGHDR.size <= len(reply):
                length, kind, _flags, seq, _pid = _NLMSGHDR.unpack_from(reply, offset)
                if kind == _NLMSG_ERROR and seq == 1:
                    (code,) = struct.unpack_from("=i", reply, offset + _NLMSGHDR.size)
                    if code:
                        raise OSError(-code, os.strerror(-code))
                    return
                if length < _NLMSGHDR.size:
                    break
                offset += (length + 3) & ~3
