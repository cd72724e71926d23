"""The default bus kept on this machine: python-can's udp_multicast, heard from this host only.

python-can's udp_multicast sends with a hop limit of one and joins its group on the interface of
the default route, so two rigs on one office network close each other's loops, and any host on
the LAN can put frames into a rig. It has no option to stay on the host, so this thin subclass
replaces only the socket set-up (everything else, the frame format, the receive path and the
timestamps, is python-can's):

- it sends with a hop limit of zero, so its frames never leave the machine (see
  :func:`_send_within_this_host`);
- its receiving socket joins the group on loopback and, as a Linux socket does by default, also
  takes the group's datagrams wherever another member of this host joined it: a stock python-can
  program, which joins and sends on the default route's interface, is heard;
- a socket filter in the kernel keeps only this group's datagrams that this host sent: those
  that arrived on loopback, or that the host's own multicast loop delivered
  (``PACKET_LOOPBACK``). A datagram from another machine arrives as ``PACKET_MULTICAST`` on a
  real interface and is dropped before it is queued, whatever source address it claims.

It also opens on a machine without a network (a board whose cable is out at boot) for an IPv4
group such as the default: loopback is always there. ``--bus-kwargs hop_limit=1`` (or more)
asks for python-can's own bus, which spans the LAN.
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
#: socket filters (linux/filter.h, asm-generic/socket.h): classic BPF opcodes, and the offsets
#: that read the network header and the skb's packet type and receiving device
_SO_ATTACH_FILTER = 26
_BPF_LD_W_ABS, _BPF_LD_H_ABS, _BPF_LD_B_ABS, _BPF_JEQ_K, _BPF_RET_K = 0x20, 0x28, 0x30, 0x15, 0x06
_SKF_AD_OFF, _SKF_NET_OFF = -0x1000, -0x100000
_SKF_AD_PKTTYPE, _SKF_AD_IFINDEX = 4, 8
#: where the destination address starts in an IPv4 and an IPv6 header
_DESTINATION = {socket.AF_INET: 16, socket.AF_INET6: 24}
#: linux/if_packet.h: a frame this host's own multicast loop delivered
_PACKET_LOOPBACK = 5
_ACCEPT, _DROP = 0xFFFFFFFF, 0
#: struct sock_filter: opcode, jump if true, jump if false, constant
_Instruction = tuple[int, int, int, int]
#: what to do when the host-local bus cannot be opened
_INSTEAD = ("use -i virtual (one process), SocketCAN (--iface), or python-can's own udp_multicast, "
            "which spans the LAN (--bus-kwargs hop_limit=1)")


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


def _from_this_host(family: socket.AddressFamily, group_text: str, drop_port: int) -> list[_Instruction]:
    """The filter program: this group's datagrams that this host sent, but ``drop_port``'s.

    A datagram passes when it arrived on loopback, which only this host reaches, or when this
    host's multicast loop delivered it (how a process here that sends on another interface
    reaches its own host). A UDP socket's filter sees the datagram from its UDP header on, the
    IP header at the network offset: the destination address there tells our group from
    another one on the same port (or a unicast datagram), the half-word at offset 0 is the
    source port; port 0 is never a sender's, so 0 drops nothing. Jumps are given by label.
    """
    group = socket.inet_pton(family, group_text)
    program: list[tuple[int, int | str, int | str, int]] = []
    for word in range(0, len(group), 4):  # the destination, word by word: not ours, drop
        program.append((_BPF_LD_W_ABS, 0, 0, _SKF_NET_OFF + _DESTINATION[family] + word))
        program.append((_BPF_JEQ_K, 0, "drop", int.from_bytes(group[word:word + 4], "big")))
    program += [
        (_BPF_LD_W_ABS, 0, 0, _SKF_AD_OFF + _SKF_AD_IFINDEX),  # the device it arrived on
        (_BPF_JEQ_K, "port", 0, socket.if_nametoindex("lo")),
        (_BPF_LD_B_ABS, 0, 0, _SKF_AD_OFF + _SKF_AD_PKTTYPE),  # how it arrived
        (_BPF_JEQ_K, 0, "drop", _PACKET_LOOPBACK),
        (_BPF_LD_H_ABS, 0, 0, 0),                                # "port": the UDP source port
        (_BPF_JEQ_K, "drop", 0, drop_port),
        (_BPF_RET_K, 0, 0, _ACCEPT),
        (_BPF_RET_K, 0, 0, _DROP),                               # "drop"
    ]
    labels = {"port": len(program) - 4, "drop": len(program) - 1}

    def offset(at: int, target: int | str) -> int:
        return target if isinstance(target, int) else labels[target] - at - 1

    return [(code, offset(at, jt), offset(at, jf), k & 0xFFFFFFFF)
            for at, (code, jt, jf, k) in enumerate(program)]


def _attach(sock: socket.socket, group_text: str, drop_port: int = 0) -> None:
    """Attach (or replace) the receiving socket's filter (:func:`_from_this_host`)."""
    program = _from_this_host(sock.family, group_text, drop_port)
    code = b"".join(struct.pack("@HBBI", *instruction) for instruction in program)
    buffer = ctypes.create_string_buffer(code, len(code))
    # struct sock_fprog: the number of instructions and a pointer to them; the kernel copies both
    fprog = struct.pack("@HP", len(program), ctypes.addressof(buffer))
    sock.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, fprog)


def _join_on_loopback(sock: socket.socket, group_text: str) -> None:
    """Join the group on loopback, where this host's nodes send an IPv4 group."""
    group = socket.inet_pton(sock.family, group_text)
    if sock.family == socket.AF_INET:  # struct ip_mreq: the group, loopback's address
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, group + socket.inet_aton("127.0.0.1"))
    else:
        index = struct.pack("@I", socket.if_nametoindex("lo"))
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, group + index)


def _ipv6_multicast_interface(group_text: str) -> int:
    """The first interface with a route for the IPv6 group (a link that is up): loopback has none."""
    for index, name in socket.if_nameindex():
        if name == "lo":
            continue
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as probe:
            try:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, struct.pack("@I", index))
                probe.connect((group_text, 9))  # the route look-up a send makes; nothing is sent
            except OSError:
                continue
        return index
    raise OSError(errno.ENETUNREACH, f"the IPv6 group {group_text} needs a network interface with a "
                  "link (loopback carries no IPv6 multicast); use an IPv4 group such as the default")


def _send_within_this_host(sock: socket.socket, group_text: str) -> None:
    """Keep ``sock``'s multicast sends on this machine: hop limit zero, on an interface where the
    kernel delivers a copy to this host's members and drops the original.

    IPv4 sends on loopback. IPv6 cannot, so it sends on an interface with a link, joined there by
    the sending socket itself: the kernel makes the local copy only for a group joined on the
    sending interface, and drops a hop limit of zero only after making it. The interface is
    fixed at the start, so a send never takes another one where that would not hold.
    """
    if sock.family == socket.AF_INET:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, struct.pack("@I", 0))
        bound = _optional(sock, socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"lo")
        pinned = _optional(sock, socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        if not (bound or pinned):
            raise OSError(errno.ENOPROTOOPT, "this system can bind the socket neither to the loopback "
                          "device nor its multicast to loopback")
        return
    index = struct.pack("@I", _ipv6_multicast_interface(group_text))
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, struct.pack("@i", 0))
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, index)
    group = socket.inet_pton(sock.family, group_text)
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, group + index)


class _HostSockets(GeneralPurposeUdpMulticastBus):
    """python-can's socket handling with a receiving socket that keeps this host's datagrams and
    a sending socket whose datagrams stay on this host (see the module).

    The node always sends from a socket of its own: without ``own_frames`` the receiver's filter
    drops that socket's port, so the node's frames are not handed back to it, as on SocketCAN by
    default, and cost no system call and decode each tick; every node of a group binds the
    group's port, so only a sender of its own tells a node's datagrams apart.
    """

    def __init__(self, group: str, port: int, own_frames: bool = True) -> None:
        super().__init__(group, port, 0)
        self.own_frames = own_frames
        self._sender = socket.socket(self._socket.family, socket.SOCK_DGRAM)
        try:
            _send_within_this_host(self._sender, group)
            self._sender.bind(("", 0))
            if not own_frames:
                _attach(self._socket, group, drop_port=self._sender.getsockname()[1])
        except OSError as exc:
            self._sender.close()
            self._socket.close()
            # an IPv6 group without a link already says what to do instead
            advice = "" if exc.errno == errno.ENETUNREACH else f"; {_INSTEAD}"
            raise can.CanInitializationError(
                f"could not open the host-local multicast socket to send from: {exc}{advice}") from exc

    def _create_socket(self, address_family: socket.AddressFamily) -> socket.socket:
        sock = socket.socket(address_family, socket.SOCK_DGRAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            # as python-can does: without nanosecond stamps it asks the kernel for microseconds
            self.timestamp_nanosecond = _optional(sock, socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            _attach(sock, self.group)  # before the bind: no datagram is ever queued unfiltered
            sock.bind(("", self.port))
            _join_on_loopback(sock, self.group)
        except OSError as exc:
            sock.close()
            raise can.CanInitializationError(
                f"could not open the host-local multicast socket: {exc}; {_INSTEAD}") from exc
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
        try:
            self._sockets = _HostSockets(channel, port, own_frames=receive_own_messages)
        except can.CanInitializationError:
            self._is_shutdown = True  # nothing left open: python-can must not warn of a leak
            raise
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
