"""The default bus kept on this machine: python-can's udp_multicast, sent and heard on loopback only.

python-can's udp_multicast sends with a hop limit of one and joins its group on the interface of
the default route, so two rigs on one office network close each other's loops, and any host on
the LAN can put frames into a rig. It has no option to stay on the host, so this thin subclass
replaces only the socket set-up (everything else, the frame format, the receive path and the
timestamps, is python-can's): the socket is bound to the loopback device, sends with a hop limit
of zero and joins the group there alone, so a datagram from another machine, which never
arrives on loopback, is not delivered to it. It also opens on a machine without a network (a
board whose cable is out at boot), where joining on the default route fails.

``--bus-kwargs hop_limit=1`` (or more) asks for python-can's own bus, which spans the LAN.
Nodes of both kinds on one host: a LAN node hears the host-local ones, not the other way round.
"""

from __future__ import annotations

import ctypes
import errno
import inspect
import logging
import socket
import struct
from typing import Any

import can
from can.interfaces.udp_multicast import UdpMulticastBus
from can.interfaces.udp_multicast.bus import SO_TIMESTAMPNS, GeneralPurposeUdpMulticastBus
from can.interfaces.udp_multicast.utils import is_msgpack_installed

log = logging.getLogger(__name__)

#: python-can's own default port of the udp_multicast interface
DEFAULT_PORT: int = inspect.signature(UdpMulticastBus.__init__).parameters["port"].default
#: Linux socket options the socket module does not name (linux/in.h, linux/in6.h)
_IP_MULTICAST_ALL = 49
_IPV6_MULTICAST_ALL = 29
#: socket filters (linux/filter.h, asm-generic/socket.h)
_SO_ATTACH_FILTER = 26
_BPF_LD_H_ABS, _BPF_JEQ_K, _BPF_RET_K = 0x28, 0x15, 0x06


def is_host_local(interface: object, bus_kwargs: dict[str, Any]) -> bool:
    """True for udp_multicast without a hop limit above zero: the bus this module opens."""
    return interface == "udp_multicast" and int(bus_kwargs.get("hop_limit", 0)) == 0


def describe(interface: object, channel: object, bus_kwargs: dict[str, Any]) -> str:
    """Where a node is, for its first log line: udp_multicast names its group, port and reach."""
    if interface != "udp_multicast":
        return f"{interface} {channel if channel is not None else ''}".rstrip()
    port = bus_kwargs.get("port", DEFAULT_PORT)
    channel = UdpMulticastBus.DEFAULT_GROUP_IPv6 if channel is None else channel
    reach = ("this host only" if is_host_local(interface, bus_kwargs)
             else f"LAN, hop limit {bus_kwargs['hop_limit']}")
    return f"udp_multicast group {channel} port {port} ({reach})"


def _optional(sock: socket.socket, level: int, option: int, value: int | bytes) -> bool:
    """Set an option that a kernel or an emulator may not know; False when it does not."""
    try:
        sock.setsockopt(level, option, value)
    except OSError as exc:
        if exc.errno not in (errno.ENOPROTOOPT, errno.EINVAL, errno.EPERM):
            raise
        log.debug("socket option %d/%d not available here: %s", level, option, exc)
        return False
    return True


def _pin_to_loopback(sock: socket.socket, group_text: str) -> tuple[int, int, bytes]:
    """Keep ``sock``'s multicast on loopback; the membership to join there, for a receiving socket."""
    family = sock.family
    bound = _optional(sock, socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"lo")
    group = socket.inet_pton(family, group_text)
    if family == socket.AF_INET:
        loopback = socket.inet_aton("127.0.0.1")
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, struct.pack("@I", 0))
        pinned = _optional(sock, socket.IPPROTO_IP, socket.IP_MULTICAST_IF, loopback)
        pinned = _optional(sock, socket.IPPROTO_IP, _IP_MULTICAST_ALL, 0) and pinned
        membership = (socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, group + loopback)
    else:
        index = struct.pack("@I", socket.if_nametoindex("lo"))
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, struct.pack("@i", 0))
        pinned = _optional(sock, socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, index)
        pinned = _optional(sock, socket.IPPROTO_IPV6, _IPV6_MULTICAST_ALL, 0) and pinned
        membership = (socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, group + index)
    if not (bound or pinned):
        raise OSError(errno.ENOPROTOOPT, "this system can bind the socket neither to the loopback "
                      "device nor its multicast to loopback")
    return membership


def _drop_source_port(sock: socket.socket, port: int) -> None:
    """Attach a classic BPF program to the UDP socket ``sock`` that drops datagrams from ``port``.

    A UDP socket's filter sees the datagram from its UDP header on: the source port is the
    half-word at offset 0. The program: load it, accept everything else, drop a match.
    """
    program = [
        (_BPF_LD_H_ABS, 0, 0, 0),
        (_BPF_JEQ_K, 0, 1, port),
        (_BPF_RET_K, 0, 0, 0),
        (_BPF_RET_K, 0, 0, 0xFFFFFFFF),
    ]
    code = b"".join(struct.pack("@HBBI", *instruction) for instruction in program)
    buffer = ctypes.create_string_buffer(code, len(code))
    # struct sock_fprog: the number of instructions and a pointer to them; the kernel copies both
    fprog = struct.pack("@HP", len(program), ctypes.addressof(buffer))
    sock.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, fprog)


class _LoopbackSocket(GeneralPurposeUdpMulticastBus):
    """python-can's socket handling with a socket that only loopback reaches.

    Bound to the loopback device (SO_BINDTODEVICE), the socket sends and hears there only. The
    multicast interface and "only the groups joined here" say the same once more, for kernels
    before 5.7, which refuse the binding to an unprivileged process; qemu's user-mode emulation
    knows the binding but neither of the other two. Without any of them the socket is not opened.

    Without ``own_frames`` the node's frames are not handed back to it, as on SocketCAN by
    default: every node of a group binds the group's port, so the source port cannot tell a
    node's own datagrams from the others' unless it sends from a socket of its own. It does, and
    a socket filter drops the datagrams of that socket's port in the kernel, before they cost a
    system call and a decode each tick. Where the kernel (or an emulator) refuses the filter, the
    frames come back and the port counts them as echoes, as before.
    """

    def __init__(self, group: str, port: int, own_frames: bool = True) -> None:
        super().__init__(group, port, 0)
        self._sender = self._socket
        if not own_frames:
            self._sender = self._separate_sender()

    def _create_socket(self, address_family: socket.AddressFamily) -> socket.socket:
        sock = socket.socket(address_family, socket.SOCK_DGRAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            # as python-can does: without nanosecond stamps it asks the kernel for microseconds
            self.timestamp_nanosecond = _optional(sock, socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            membership = _pin_to_loopback(sock, self.group)
            sock.bind(("", self.port))
            sock.setsockopt(*membership)
        except OSError as exc:
            sock.close()
            raise can.CanInitializationError(f"could not open the host-local multicast socket: {exc}") \
                from exc
        return sock

    def _separate_sender(self) -> socket.socket:
        """A socket of its own to send from, its port filtered out of the receiving socket; the
        receiving socket itself where that cannot be set up."""
        sock = socket.socket(self._socket.family, socket.SOCK_DGRAM)
        try:
            membership = _pin_to_loopback(sock, self.group)
            sock.bind(("", 0))
            sock.setsockopt(*membership)  # IPv6 routes the group from a member only
            _drop_source_port(self._socket, sock.getsockname()[1])
        except OSError as exc:
            sock.close()
            log.debug("own frames come back on this system (%s); the port counts them as echoes", exc)
            return self._socket
        return sock

    @property
    def own_frames_come_back(self) -> bool:
        """False once the kernel keeps this node's frames from it (see the class)."""
        return self._sender is self._socket

    def send(self, data: bytes, timeout: float | None = None) -> None:
        """python-can's send, from the sending socket."""
        if timeout != self._last_send_timeout:
            self._last_send_timeout = timeout
            self._sender.settimeout(timeout)
        try:
            if self._sender.sendto(data, self._send_destination) < len(data):
                raise can.CanTimeoutError()
        except TimeoutError:
            raise can.CanTimeoutError() from None
        except OSError as error:
            raise can.CanOperationError("failed to send via socket") from error

    def shutdown(self) -> None:
        if self._sender is not self._socket:
            self._sender.close()
        super().shutdown()

    def recv(self, timeout: float | None = None) -> tuple[bytes, Any, float] | None:
        """python-can's receive, without its ``select`` when the caller does not want to wait.

        A node drains its queue with a zero timeout several times a tick; the kernel answers a
        non-blocking read directly, so asking ``select`` first only costs a second system call.
        Waiting reads, and sockets without nanosecond stamps, go through python-can unchanged.
        """
        if timeout != 0.0 or not self.timestamp_nanosecond:
            return super().recv(timeout)
        try:
            data, ancillary, _, sender = self._socket.recvmsg(
                self.max_buffer, self.received_ancillary_buffer_size, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return None
        except OSError as exc:
            raise can.CanOperationError(f"Failed to receive from IP/UDP socket: {exc}") from exc
        if len(ancillary) != 1 or ancillary[0][:2] != (socket.SOL_SOCKET, SO_TIMESTAMPNS):
            raise can.CanOperationError("received a control message that was not asked for")
        seconds, nanoseconds = struct.unpack(self.received_timestamp_struct, ancillary[0][2])
        return data, sender, seconds + nanoseconds * 1.0e-9


class HostLocalUdpMulticastBus(UdpMulticastBus):
    """python-can's udp_multicast bus whose frames stay on this machine.

    The constructor is python-can's, with the socket of :class:`_LoopbackSocket`; the base
    constructor cannot be called, because it opens python-can's LAN socket first. As on
    python-can's SocketCAN and virtual buses, a node hears its own frames only when it asks
    (``receive_own_messages``); python-can's udp_multicast always hands them back.
    """

    def __init__(self, channel: str = UdpMulticastBus.DEFAULT_GROUP_IPv6, port: int = DEFAULT_PORT,
                 hop_limit: int = 0, receive_own_messages: bool = False, fd: bool = True,
                 **kwargs: Any) -> None:
        if hop_limit != 0:
            raise TypeError("a host-local bus has hop limit 0")
        is_msgpack_installed()
        can.BusABC.__init__(self, channel, **kwargs)
        self._loopback = _LoopbackSocket(channel, port, own_frames=receive_own_messages)
        self._multicast = self._loopback
        self._can_protocol = can.CanProtocol.CAN_FD if fd else can.CanProtocol.CAN_20

    @property
    def own_frames_come_back(self) -> bool:
        """False once the kernel keeps this node's frames from it: a frame with one of its
        identifiers is then always another node's (ecu_sim.bus.own)."""
        return self._loopback.own_frames_come_back

    def recv(self, timeout: float | None = None) -> can.Message | None:
        """python-can's receive; a read that must not wait takes the short way.

        A node drains its queue with a zero timeout every tick. python-can's generic receive
        loop would read the clock, log every frame at a level nobody enables, and answer None
        after the first frame the filters reject even with more queued; here the queue is read
        until a frame passes or it is empty.
        """
        if timeout != 0.0:
            return super().recv(timeout)
        receive, matches = self._recv_internal, self._matches_filters
        while True:
            msg, _ = receive(0.0)
            if msg is None or matches(msg):
                return msg


def open_host_local(options: dict[str, Any], bus_kwargs: dict[str, Any]) -> can.BusABC:
    """The host-local bus with python-can's other options (channel, fd, filters, ``--bus-kwargs``)."""
    kwargs = {k: v for k, v in bus_kwargs.items() if k != "hop_limit"}
    kwargs.update({k: options[k] for k in ("channel", "fd", "can_filters") if options.get(k) is not None})
    return HostLocalUdpMulticastBus(**kwargs)


def announce_lan(channel: object, bus_kwargs: dict[str, Any]) -> None:
    """The line a node logs when its bus reaches other machines, so that never happens unnoticed."""
    log.warning("the %s: frames go to other machines on the network and theirs are accepted",
                describe("udp_multicast", channel, bus_kwargs))
