"""The receiver: the measuring ear, in a process of its own so its scheduling is not the senders'.

It keeps the kernel's receive timestamp (SO_TIMESTAMPNS) of every frame, so its own wake-ups do
not enter the figures, and writes them out on SIGTERM. Both ends of it are here, the role and
the run's handle on it, because they share the lines it prints ("ready", "first ...").
"""

from __future__ import annotations

import json
import select
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.processes import Processes, actor_command
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


class Receiver:
    """The receiver process and the first-frame announcements it prints."""

    def __init__(self, procs: Processes, ports: Sequence[int], out: Path) -> None:
        self.out = out
        self.first: dict[tuple[int, int], float] = {}
        self._changed = threading.Condition()
        self.proc = procs.spawn("receiver", actor_command("receiver", "--ports", *ports, "--out", out),
                                stdout=subprocess.PIPE)
        assert self.proc.popen.stdout is not None
        line = self.proc.popen.stdout.readline().decode().strip()
        if line != "ready":
            raise RuntimeError(f"the receiver did not start (see {procs.logs})")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stdout = self.proc.popen.stdout
        assert stdout is not None
        for raw in stdout:
            parts = raw.decode().split()
            if len(parts) == 4 and parts[0] == "first":
                with self._changed:
                    self.first[(int(parts[1]), int(parts[2]))] = float(parts[3])
                    self._changed.notify_all()

    def wait_for(self, streams: Sequence[tuple[int, int]], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not all(s in self.first for s in streams):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def frames(self) -> dict[str, Any]:
        with open(self.out, encoding="ascii") as f:
            data: dict[str, Any] = json.load(f)
        return data
