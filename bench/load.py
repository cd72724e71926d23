"""What the phases put on the bus and the machine: APP steps for the latency, a flood, busy cores."""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import time
from collections.abc import Sequence

from bench.roles import FLOOD_IDS, GROUP, Stop, udp_bus


def stimulus(ports: Sequence[int], seed: int, low: float, high: float) -> None:
    """APP frames at random intervals of 110..190 ms, switching low/high every 2..4 frames.

    The random phase makes the arrival moments cover the receiver's whole tick period; intervals
    longer than a period mean each step is the newest frame at the next tick; shorter than the
    default hold time (three periods) so the pedal never counts as missing.
    """
    import can

    from ecu_sim.codec.profile import Profile

    stop = Stop()
    rng = random.Random(seed)
    codec = Profile.load("amp").app
    buses = [udp_bus(port) for port in ports]
    value, left = low, rng.randint(2, 4)
    due = time.monotonic()
    while not stop:
        msg = can.Message(arbitration_id=codec.frame_id, data=codec.encode(value), is_extended_id=True)
        for bus in buses:
            bus.send(msg)
        left -= 1
        if left == 0:
            value, left = (high if value == low else low), rng.randint(2, 4)
        due += rng.uniform(0.110, 0.190)
        stop.event.wait(max(0.0, due - time.monotonic()))
    for bus in buses:
        bus.shutdown()


def flood(ports: Sequence[int], rate: float) -> None:
    """About ``rate`` frames a second of unrelated traffic on each port, in batches every 5 ms."""
    import can
    from can.interfaces.udp_multicast.utils import pack_message

    stop = Stop()
    payloads = [pack_message(can.Message(arbitration_id=ident, data=bytes(range(i, i + 8)),
                                         is_extended_id=True)) for i, ident in enumerate(FLOOD_IDS)]
    # on the nodes' host-local bus: loopback, hop limit 0 (never onto the network)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, struct.pack("@I", 0))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
    destinations = [(GROUP, port) for port in ports]
    per_batch = max(1, round(rate * 0.005))
    batch_period = per_batch / rate
    sent = 0
    due = time.monotonic()
    while not stop:
        for _ in range(per_batch):
            payload = payloads[sent % len(payloads)]
            for destination in destinations:
                # a full socket buffer drops a flood frame; that is what floods do
                with contextlib.suppress(OSError):
                    sock.sendto(payload, destination)
            sent += 1
        due += batch_period
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        elif delay < -0.5:
            due = time.monotonic()  # far behind (starved of CPU): do not burst to catch up
    sock.close()


def hog() -> None:
    """Burn one core until stopped."""
    stop = Stop()
    x = 0
    while not stop:
        for _ in range(10_000):
            x += 1
