"""``--stream udp://HOST:PORT``: one JSON datagram per tick, as PlotJuggler's UDP server reads them.

PlotJuggler's "UDP Server" with the JSON protocol takes one JSON object per datagram, flattens
nested objects into paths (``ecu/rx/EEC2 PGN 61443 SA 0x26/AccelPedalPos1``) and, when told to,
uses the ``timestamp`` field (seconds) as the time axis. The object is the tick as
:class:`ecu_sim.io.signals.TickView` sees it.

A viewer must never slow the node down: the socket is non-blocking and not connected, so a
viewer that is absent, slow or unreachable costs a failed ``sendto`` at most, which is counted
and otherwise ignored. The datagram is sent after the tick's frame, never between the deadline
and the send.
"""

from __future__ import annotations

import json
import logging
import socket
from types import TracebackType
from urllib.parse import urlsplit

from ecu_sim.errors import ConfigError
from ecu_sim.io.signals import TickView

log = logging.getLogger(__name__)

#: what one datagram may hold over IPv4 UDP; a bigger tick (a DBC with very many signals) is
#: counted as an error rather than sent as fragments a busy network loses anyway
MAX_DATAGRAM = 65507


def parse_target(url: str) -> tuple[str, int]:
    """``udp://HOST:PORT`` -> (host, port); a ConfigError says what a usable target looks like."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "udp" or not parts.hostname or port is None or port == 0:
        raise ConfigError(f"--stream {url!r}: expected udp://HOST:PORT, e.g. udp://127.0.0.1:9870 "
                          "(PlotJuggler's UDP server)")
    return parts.hostname, port


class UdpStream:
    """A tick observer that sends each tick to a UDP address; a context manager."""

    def __init__(self, url: str, view: TickView) -> None:
        host, port = parse_target(url)
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
        except socket.gaierror as exc:
            raise ConfigError(f"--stream {url}: cannot resolve {host!r} ({exc.strerror})") from None
        family, kind, proto, _, address = infos[0]
        self.url = url
        self._address = address
        self._socket = socket.socket(family, kind, proto)
        self._socket.setblocking(False)
        self._view = view
        self._dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
        #: datagrams the kernel took
        self.sent = 0
        #: datagrams that could not be sent (no route, a full socket buffer, too big)
        self.errors = 0

    def __enter__(self) -> UdpStream:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def on_tick(self, tick: int, now: float, transmitted: bool) -> None:
        try:
            payload = self._dumps(self._view.take(tick, now, transmitted)).encode()
        except ValueError:  # a value JSON cannot carry (not a number): this tick is not sent
            self.errors += 1
            return
        if len(payload) > MAX_DATAGRAM:
            self.errors += 1
            return
        try:
            self._socket.sendto(payload, self._address)
        except OSError:
            self.errors += 1
            return
        self.sent += 1

    def close(self) -> None:
        if self._socket.fileno() < 0:
            return
        self._socket.close()
        log.info("streamed %d ticks to %s (%d not sent)", self.sent, self.url, self.errors)
