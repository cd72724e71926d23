#!/usr/bin/env python3
"""A cruise controller that drives `ecu-sim cosim` over the fixed-format encoding (standard library only).

The starting point for a Simulink model, a CARLA script or a test rig: every step sends
[version, seq, n, tick, app_pct, grade_pct] as little-endian float64 and reads back
[version, seq, n, tick, t_s, speed_kph, distance_m, grade_pct, app_pct, app_missing, <bus signals>]
(`ecu-sim cosim --contract csv` lists them). The controller is ecu-sim's PI (ecu_sim/cruise/pi.py,
same gains and anti-windup) fed with the speed as it is on the bus, so with one tick a step the
run is the one `ecu-sim simulate --set-speed` gives. A lost answer is retried with the same
sequence number; ecu-sim answers a retry with the stored answer and never steps twice.

  ecu-sim cosim --listen 127.0.0.1:47000 &
  python3 examples/cosim_pi_peer.py --connect 127.0.0.1:47000 --duration 60 --out run.csv
"""

from __future__ import annotations

import argparse
import math
import socket
import struct
import sys

VERSION = 1
HEADER = struct.Struct("<4d")
REQUEST = struct.Struct("<6d")
#: positions in the answer's values (after the four header doubles), from `ecu-sim cosim --contract`
T_S, SPEED_KPH, APP_PCT, BUS_SPEED_KPH = 0, 1, 4, 6


class PI:
    """ecu-sim's PI cruise controller: kp % APP per km/h, ki % APP per km/h s, conditional integration."""

    def __init__(self, kp: float = 20.0, ki: float = 2.0, lo: float = 0.0, hi: float = 100.0) -> None:
        self.kp, self.ki, self.lo, self.hi = kp, ki, lo, hi
        self.integral = 0.0

    def step(self, set_kph: float, speed_kph: float, dt_s: float) -> float:
        error = set_kph - speed_kph
        if not math.isfinite(error):
            error = 0.0
        p_term = self.kp * error
        integral = min(max(self.lo, self.integral), self.hi)
        candidate = integral + self.ki * error * dt_s
        unclamped = p_term + candidate
        if not ((unclamped > self.hi and error > 0.0) or (unclamped < self.lo and error < 0.0)):
            integral = min(max(self.lo, candidate), self.hi)
        self.integral = integral
        return min(max(self.lo, p_term + integral), self.hi)


class Link:
    """Requests with retries: the same sequence number until its answer comes."""

    def __init__(self, host: str, port: int, timeout_s: float, retries: int) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.settimeout(timeout_s)
        self.address = (host, port)
        self.retries = retries
        self.seq = 0

    def step(self, n: int, app_pct: float, grade_pct: float = math.nan) -> tuple[int, tuple[float, ...]]:
        self.seq += 1
        request = REQUEST.pack(VERSION, self.seq, n, 0, app_pct, grade_pct)
        for _ in range(self.retries + 1):
            self.sock.sendto(request, self.address)
            try:
                while True:
                    data = self.sock.recv(65535)
                    _, seq, got_n, tick = HEADER.unpack_from(data)
                    if seq == self.seq:
                        break  # an answer to an earlier try of an older request is skipped
            except TimeoutError:
                continue
            if got_n < 0:
                sys.exit(f"ecu-sim refused request {self.seq}: {data[32:].decode('utf-8', 'replace')}")
            count = (len(data) - HEADER.size) // 8
            return int(tick), struct.unpack_from(f"<{count}d", data, HEADER.size)
        sys.exit(f"no answer from ecu-sim at {self.address[0]}:{self.address[1]} after "
                 f"{self.retries + 1} tries")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connect", default="127.0.0.1:47000", metavar="HOST:PORT")
    parser.add_argument("--set-speed", type=float, default=90.0, metavar="KPH")
    parser.add_argument("--duration", type=float, default=60.0, metavar="S")
    parser.add_argument("--period", type=float, default=0.1, metavar="S", help="ecu-sim's period")
    parser.add_argument("--ticks-per-step", type=int, default=1, metavar="N")
    parser.add_argument("--timeout", type=float, default=1.0, metavar="S", help="retry after S seconds")
    parser.add_argument("--retries", type=int, default=5)
    parser.add_argument("--out", metavar="FILE.csv", help="t_s,speed_kph,app_pct per step")
    args = parser.parse_args()
    host, _, port = args.connect.rpartition(":")
    link = Link(host, int(port), args.timeout, args.retries)
    controller = PI()
    ticks = round(args.duration / args.period)
    rows = ["t_s,speed_kph,app_pct"]
    app, done = math.nan, 0  # no APP before the first speed: the truck coasts, as without a CCM
    while done < ticks:
        n = min(args.ticks_per_step, ticks - done)
        tick, values = link.step(n, app)
        done += n
        rows.append(f"{values[T_S]!r},{values[SPEED_KPH]!r},{values[APP_PCT]!r}")
        app = controller.step(args.set_speed, values[BUS_SPEED_KPH], args.period * n)
    if args.out:
        with open(args.out, "w", encoding="ascii") as out:
            out.write("\n".join(rows) + "\n")
    print(f"tick {tick}: t {values[T_S]:.1f} s, speed {values[SPEED_KPH]:.2f} km/h, "
          f"APP {values[APP_PCT]:.1f} %, {link.seq} requests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
