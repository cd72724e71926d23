"""``--plant udp:HOST:PORT``: the truck lives in another program, and the ECU becomes its J1939 face.

Every tick the ECU sends the APP it holds as a fixed-format request of one tick (the same
datagrams a peer sends ``ecu-sim cosim``, docs/cosim.md) and takes speed, distance and grade from
the answer, so an ``ecu-sim cosim`` can itself be the plant. It waits for the answer no longer than
a fraction of the period, so a slow plant cannot hold up the loop: a missing or late answer
counts as a late tick and the last speed is held, for at most the input timeout, as a held APP
is; after that the speed is not available (NaN), which the codec sends as J1939's not-available,
as a failed sensor would. An answer to an older request (late) is dropped by its sequence number.
"""

from __future__ import annotations

import logging
import math
import socket
import time

from ecu_sim.cosim import protocol
from ecu_sim.cosim.protocol import Datagram, ProtocolError
from ecu_sim.errors import ConfigError
from ecu_sim.vehicle.model import TruckState

log = logging.getLogger("ecu_sim")

#: the part of a period the ECU waits for the plant's answer before it holds the last speed
WAIT_FRACTION = 0.5
#: values the answer must carry: t_s, speed_kph, distance_m, grade_pct
_NEEDED = 4


def parse_plant(text: str, origin: str) -> tuple[str, int]:
    """``udp:HOST:PORT`` as a socket address; ConfigError names where it was given."""
    scheme, _, address = text.partition(":")
    host, sep, port = address.rpartition(":")
    if scheme != "udp" or not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise ConfigError(f"plant {text!r} ({origin}): expected udp:HOST:PORT, e.g. udp:127.0.0.1:47000")
    return host.strip("[]"), int(port)


class UdpPlant:
    """A plant behind the fixed-format encoding, stepped once a tick; also the road (its grade)."""

    def __init__(self, address: tuple[str, int], period_s: float, hold_ticks: int,
                 initial_speed_kph: float, initial_grade_pct: float = 0.0) -> None:
        self.address = address
        try:
            self._sock = socket.socket(socket.getaddrinfo(*address, type=socket.SOCK_DGRAM)[0][0],
                                       socket.SOCK_DGRAM)
            self._sock.connect(address)
        except OSError as exc:
            raise ConfigError(f"cannot reach the plant at udp {address[0]}:{address[1]}: "
                              f"{exc.strerror or exc}") from None
        self._wait_s = WAIT_FRACTION * period_s
        self._hold_ticks = hold_ticks
        self._state = TruckState.from_kph(initial_speed_kph)
        self._grade = initial_grade_pct
        self._seq = 0
        self._missed = 0
        self.late = 0
        self.rtt_s = math.nan

    def close(self) -> None:
        self._sock.close()

    def grade_at(self, distance_m: float) -> float:
        """The plant's grade of its latest answer: the road is the plant's, not a route of ours."""
        return self._grade

    def step(self, state: TruckState, app_pct: float, grade_pct: float, dt_s: float) -> TruckState:
        self._seq += 1
        request = protocol.encode(Datagram(self._seq, 1, self._seq, (app_pct, math.nan)))
        sent = time.perf_counter()
        answer = self._exchange(request, sent)
        if answer is None:
            return self._held()
        self.rtt_s = time.perf_counter() - sent
        if self._missed >= self._hold_ticks:
            log.info("plant at udp %s:%d answers again: speed from it is back on the bus", *self.address)
        self._missed = 0
        _, speed, distance, grade = answer.values[:_NEEDED]
        self._grade = grade if math.isfinite(grade) else self._grade
        self._state = TruckState.from_kph(speed, distance)
        return self._state

    def _exchange(self, request: bytes, sent: float) -> Datagram | None:
        sock = self._sock
        try:
            sock.send(request)
        except OSError as exc:  # e.g. nobody listens yet: the port is unreachable
            log.debug("plant request %d not sent: %s", self._seq, exc)
        deadline = sent + self._wait_s
        while (remaining := deadline - time.perf_counter()) > 0.0:
            sock.settimeout(remaining)
            try:
                data = sock.recv(protocol.MAX_DATAGRAM)
            except TimeoutError:
                return None
            except OSError:
                continue  # an ICMP port unreachable for an earlier request
            try:
                answer = protocol.decode(data, None)
                if not answer.is_error and len(answer.values) < _NEEDED:
                    raise ProtocolError(protocol.ErrorCode.MALFORMED, f"{len(answer.values)} values, "
                                        f"fewer than t_s, speed_kph, distance_m, grade_pct")
            except ProtocolError as exc:
                log.warning("plant answer unreadable: %s", exc)
                continue
            if answer.is_error:
                log.warning("plant refused request %d: %s", answer.seq, answer.message)
                return None
            if answer.seq == self._seq:
                return answer
        return None

    def _held(self) -> TruckState:
        """No answer in time: the last speed for the input timeout, then not available."""
        self.late += 1
        self._missed += 1
        if self._missed < self._hold_ticks:
            return self._state
        if self._missed == self._hold_ticks:
            log.warning("plant at udp %s:%d has not answered for %d ticks (the input timeout): speed "
                        "is sent as not available until it answers", self.address[0], self.address[1],
                        self._missed)
        return TruckState(math.nan, self._state.distance_m)

    def status_text(self) -> str:
        rtt = "none yet" if math.isnan(self.rtt_s) else f"{self.rtt_s * 1000:.2f} ms"
        return f"plant rtt {rtt} late {self.late}"
