"""The receiver role: the measuring ear, in a process of its own so its scheduling is not the senders'.

It keeps the kernel's receive timestamp (SO_TIMESTAMPNS) of every frame, so its own wake-ups do
not enter the figures, and writes them out on SIGTERM.
"""

from __future__ import annotations

import json
import select
from collections.abc import Sequence

from bench.roles import FLOOD_IDS, GROUP, Stop


def receiver(ports: Sequence[int], out: str) -> None:
    """Record (kernel timestamp, bus index, identifier, payload) of every non-flood frame."""
    import msgpack
    from can.interfaces.udp_multicast.bus import GeneralPurposeUdpMulticastBus

    stop = Stop()
    links = [GeneralPurposeUdpMulticastBus(GROUP, port, hop_limit=1) for port in ports]
    by_fd = {link.fileno(): (index, link) for index, link in enumerate(links)}
    flood = set(FLOOD_IDS)
    frames: list[tuple[float, int, int, str]] = []
    flood_count = [0] * len(links)
    seen: set[tuple[int, int]] = set()
    print("ready", flush=True)
    unpackb = msgpack.unpackb
    while not stop:
        try:
            ready, _, _ = select.select(list(by_fd), [], [], 0.2)
        except InterruptedError:
            continue
        for fd in ready:
            index, link = by_fd[fd]
            result = link.recv(0.0)
            if not result:
                continue
            data, _, timestamp = result
            frame = unpackb(data, raw=False)
            ident = frame["arbitration_id"]
            if ident in flood:
                flood_count[index] += 1
                continue
            frames.append((timestamp, index, ident, bytes(frame["data"]).hex()))
            if (index, ident) not in seen:
                seen.add((index, ident))
                print(f"first {index} {ident} {timestamp:.6f}", flush=True)
    for link in links:
        link.shutdown()
    with open(out, "w", encoding="ascii") as f:
        json.dump({"ports": list(ports), "frames": frames, "flood": flood_count}, f)
