"""The default bus kept on this machine: python-can's udp_multicast, heard from this host only.

python-can's udp_multicast sends with a hop limit of one and joins its group on the interface of
the default route, so two rigs on one office network close each other's loops, and any host on
the LAN can put frames into a rig. It has no option to stay on the host, so this thin subclass
replaces only the socket set-up (everything else, the frame format, the receive path and the
timestamps, is python-can's):

- it sends with a hop limit of zero, so its frames never leave the machine (see
  :func:`_send_within_this_host`);
- it joins the group on loopback and on every interface that is up, so it hears a stock
  python-can program of this host, which sends on the default route's interface;
- a socket filter in the kernel keeps only what this host sent: datagrams that arrived on
  loopback, or that the host's own multicast loop delivered (``PACKET_LOOPBACK``). A datagram
  from another machine arrives as ``PACKET_MULTICAST`` on a real interface and is dropped before
  it is queued, whatever source address it claims.

It also opens on a machine without a network (a board whose cable is out at boot): loopback is
always there. An interface that comes up after the node opened its bus is joined at its next
start. ``--bus-kwargs hop_limit=1`` (or more) asks for python-can's own bus, which spans the LAN.
"""

from __future__ import annotations

import ctypes
import errno
import inspect
import logging
import socket
import struct
from pathlib import Path
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
#: socket filters (linux/filter.h, asm-generic/socket.h): classic BPF opcodes and the ancillary
#: loads of the packet type and the receiving device
_SO_ATTACH_FILTER = 26
_BPF_LD_W_ABS, _BPF_LD_H_ABS, _BPF_LD_B_ABS, _BPF_JEQ_K, _BPF_RET_K = 0x20, 0x28, 0x30, 0x15, 0x06
_SKF_AD_OFF = -0x1000
_SKF_AD_PKTTYPE, _SKF_AD_IFINDEX = 4, 8
#: linux/if_packet.h: a frame this host's own multicast loop delivered
_PACKET_LOOPBACK = 5
#: linux/if.h: interface flags, as /sys/class/net/NAME/flags shows them
_IFF_UP, _IFF_MULTICAST = 0x1, 0x1000
_ACCEPT, _DROP = 0xFFFFFFFF, 0


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


def _ancillary(load: int) -> int:
    """The constant of a classic BPF load that reads an skb field instead of packet bytes."""
    return (_SKF_AD_OFF + load) & 0xFFFFFFFF


def _keep_this_hosts_datagrams(sock: socket.socket, drop_port: int = 0) -> None:
    """Attach the filter that makes the bus host-local, dropping ``drop_port``'s datagrams too.

    A datagram passes when it arrived on loopback, which only this host reaches, or when this
    host's multicast loop delivered it (how a process here that sends on another interface
    reaches its own host). A UDP socket's filter sees the datagram from its UDP header on: the
    source port is the half-word at offset 0; port 0 is never a sender's, so 0 drops nothing.
    """
    loopback = socket.if_nametoindex("lo")
    program = [
        (_BPF_LD_W_ABS, 0, 0, _ancillary(_SKF_AD_IFINDEX)),  # 0: the device it arrived on
        (_BPF_JEQ_K, 2, 0, loopback),                          # 1: loopback: on to 4
        (_BPF_LD_B_ABS, 0, 0, _ancillary(_SKF_AD_PKTTYPE)),  # 2: how it arrived
        (_BPF_JEQ_K, 0, 3, _PACKET_LOOPBACK),                  # 3: not from this host: drop
        (_BPF_LD_H_ABS, 0, 0, 0),                              # 4: the UDP source port
        (_BPF_JEQ_K, 1, 0, drop_port),                         # 5: a port we drop: drop
        (_BPF_RET_K, 0, 0, _ACCEPT),
        (_BPF_RET_K, 0, 0, _DROP),
    ]
    code = b"".join(struct.pack("@HBBI", *instruction) for instruction in program)
    buffer = ctypes.create_string_buffer(code, len(code))
    # struct sock_fprog: the number of instructions and a pointer to them; the kernel copies both
    fprog = struct.pack("@HP", len(program), ctypes.addressof(buffer))
    sock.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, fprog)


def _interfaces_up() -> list[int]:
    """Loopback first, then every interface that is up and takes multicast (by index)."""
    indices = [socket.if_nametoindex("lo")]
    for index, name in socket.if_nameindex():
        try:
            flags = int((Path("/sys/class/net") / name / "flags").read_text(), 16)
        except (OSError, ValueError):
            continue
        if index not in indices and flags & _IFF_UP and flags & _IFF_MULTICAST:
            indices.append(index)
    return indices


def _join_on_every_interface(sock: socket.socket, group_text: str) -> None:
    """Join the group on loopback (required) and on every other interface that is up (where the
    kernel lets it: each membership costs one of a socket's few), so this host's senders on any
    of them are heard; the filter keeps the other machines' datagrams out."""
    family = sock.family
    group = socket.inet_pton(family, group_text)
    for number, index in enumerate(_interfaces_up()):
        if family == socket.AF_INET:  # struct ip_mreqn: group, local address (any), interface
            request = (socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                       group + struct.pack("@4si", bytes(4), index))
        else:
            request = (socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, group + struct.pack("@I", index))
        try:
            sock.setsockopt(*request)
        except OSError as exc:
            if number == 0:
                raise
            log.debug("not joined on interface %d: %s", index, exc)


def _send_within_this_host(sock: socket.socket, group_text: str) -> None:
    """Keep ``sock``'s multicast sends on this machine: hop limit zero, on an interface where the
    kernel delivers a copy to this host's members and drops the original.

    IPv4 sends on loopback. IPv6 cannot (loopback takes no IPv6 multicast route), so it sends on
    the first other interface that is up, joined there by the sending socket itself: the kernel
    makes the local copy only for a group joined on the sending interface, and drops a hop limit
    of zero only after making it.
    """
    if sock.family == socket.AF_INET:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, struct.pack("@I", 0))
        bound = _optional(sock, socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"lo")
        pinned = _optional(sock, socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        if not (bound or pinned):
            raise OSError(errno.ENOPROTOOPT, "this system can bind the socket neither to the loopback "
                          "device nor its multicast to loopback")
        return
    interfaces = _interfaces_up()[1:]
    if not interfaces:
        raise OSError(errno.ENETUNREACH, f"the IPv6 group {group_text} needs a network interface that "
                      "is up (loopback carries no IPv6 multicast); use an IPv4 group such as the default")
    index = struct.pack("@I", interfaces[0])
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, struct.pack("@i", 0))
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, index)
    group = socket.inet_pton(sock.family, group_text)
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, group + index)


class _HostSockets(GeneralPurposeUdpMulticastBus):
    """python-can's socket handling with a receiving socket that keeps this host's datagrams and
    a sending socket whose datagrams stay on this host.

    The receiver joins everywhere and filters in the kernel (see the module); "only the groups
    joined here" keeps another group on the same port out (qemu's user-mode emulation does not
    know that option). The node always sends from a socket of its own: without ``own_frames``
    the receiver's filter drops that socket's port, so the node's frames are not handed back to
    it, as on SocketCAN by default, and cost no system call and decode each tick; every node of
    a group binds the group's port, so only a sender of its own tells a node's datagrams apart.
    """

    def __init__(self, group: str, port: int, own_frames: bool = True) -> None:
        super().__init__(group, port, 0)
        self.own_frames = own_frames
        self._sender = socket.socket(self._socket.family, socket.SOCK_DGRAM)
        try:
            _send_within_this_host(self._sender, group)
            self._sender.bind(("", 0))
            if not own_frames:
                _keep_this_hosts_datagrams(self._socket, drop_port=self._sender.getsockname()[1])
        except OSError as exc:
            self._sender.close()
            self._socket.close()
            raise can.CanInitializationError(
                f"could not open the host-local multicast socket to send from: {exc}") from exc

    def _create_socket(self, address_family: socket.AddressFamily) -> socket.socket:
        sock = socket.socket(address_family, socket.SOCK_DGRAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            # as python-can does: without nanosecond stamps it asks the kernel for microseconds
            self.timestamp_nanosecond = _optional(sock, socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            if address_family == socket.AF_INET:
                _optional(sock, socket.IPPROTO_IP, _IP_MULTICAST_ALL, 0)
            else:
                _optional(sock, socket.IPPROTO_IPV6, _IPV6_MULTICAST_ALL, 0)
            # before the bind: no datagram is ever queued unfiltered
            _keep_this_hosts_datagrams(sock)
            sock.bind(("", self.port))
            _join_on_every_interface(sock, self.group)
        except OSError as exc:
            sock.close()
            raise can.CanInitializationError(f"could not open the host-local multicast socket: {exc}") \
                from exc
        return sock

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

    The constructor is python-can's, with the sockets of :class:`_HostSockets`; the base
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
        self._sockets = _HostSockets(channel, port, own_frames=receive_own_messages)
        self._multicast = self._sockets
        self._can_protocol = can.CanProtocol.CAN_FD if fd else can.CanProtocol.CAN_20

    @property
    def own_frames_come_back(self) -> bool:
        """False when the kernel keeps this node's frames from it: a frame with one of its
        identifiers is then always another node's (ecu_sim.bus.own)."""
        return self._sockets.own_frames

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
