#!/usr/bin/env python3
"""A cruise control module on ecu-sim's CAN bus in virtual time: CAN frames in the step (stdlib only).

The starting point for a controller's software built for a PC, a restbus or a test script that
speaks CAN: each request carries the frames this peer puts on the bus during the step, each
answer the frames ecu-sim sent (here the speed, CCVS1). The frame layouts are those of
`--profile amp` (the testbed's bytes): speed in bytes 5..6 of 0x18FEF125, 1/256 km/h per bit;
APP in byte 6 of 0x18F00326, 1 % per bit, offset -125 %. The fixed-format inputs are NaN:
the pedal reaches the ECU only as a frame, as it would from a real controller.

  ecu-sim cosim --listen 127.0.0.1:47000 &
  python3 examples/cosim_can_peer.py --connect 127.0.0.1:47000 --duration 60
"""

from __future__ import annotations

import argparse
import math
import socket
import struct
import sys

VERSION = 1
HEADER = struct.Struct("<4d")
RECORD = struct.Struct("<IIBBH")
EFF = 0x80000000
SPEED_ID, APP_ID = 0x18FEF125, 0x18F00326
T_S = 0  # position of t_s in the answer's values


def pi_step(state: list[float], set_kph: float, speed_kph: float, dt_s: float,
            kp: float = 20.0, ki: float = 2.0) -> float:
    """ecu-sim's PI controller (ecu_sim/cruise/pi.py); ``state[0]`` is the integral term."""
    error = set_kph - speed_kph
    p_term = kp * error
    integral = min(max(0.0, state[0]), 100.0)
    candidate = integral + ki * error * dt_s
    unclamped = p_term + candidate
    if not ((unclamped > 100.0 and error > 0.0) or (unclamped < 0.0 and error < 0.0)):
        integral = min(max(0.0, candidate), 100.0)
    state[0] = integral
    return min(max(0.0, p_term + integral), 100.0)


def app_frame(app_pct: float, offset: int) -> bytes:
    """One record: the EEC2 frame with APP in byte 6 and every other byte 0xFF (not available)."""
    data = bytearray(b"\xff" * 8)
    data[6] = round(app_pct + 125.0)
    return RECORD.pack(APP_ID | EFF, offset, 8, 0, 0) + bytes(data)


def frames_of(data: bytes, start: int) -> list[tuple[int, int, bytes]]:
    """(identifier, tick offset, data) of every frame an answer carries."""
    (count,) = struct.unpack_from("<I", data, start)
    at, found = start + 4, []
    for _ in range(count):
        ident, offset, length, flags, _ = RECORD.unpack_from(data, at)
        at += RECORD.size
        found.append((ident & 0x1FFFFFFF, offset, data[at:at + length]))
        at += 64 if flags & 1 else 8
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connect", default="127.0.0.1:47000", metavar="HOST:PORT")
    parser.add_argument("--set-speed", type=float, default=90.0, metavar="KPH")
    parser.add_argument("--duration", type=float, default=60.0, metavar="S")
    parser.add_argument("--period", type=float, default=0.1, metavar="S", help="ecu-sim's period")
    parser.add_argument("--outputs", type=int, default=7, help="doubles in an answer (--contract)")
    parser.add_argument("--out", metavar="FILE.csv", help="t_s,speed_kph (from the bus) per step")
    args = parser.parse_args()
    host, _, port = args.connect.rpartition(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(5.0)
    state, rows = [0.0], ["t_s,speed_kph"]
    frames: list[bytes] = []  # nothing to say before the first speed
    for seq in range(1, round(args.duration / args.period) + 1):
        request = (HEADER.pack(VERSION, seq, 1, 0) + struct.pack("<2d", math.nan, math.nan)
                   + struct.pack("<I", len(frames)) + b"".join(frames))
        sock.sendto(request, (host, int(port)))
        data = sock.recv(65535)
        _, _, n, _ = HEADER.unpack_from(data)
        if n < 0:
            sys.exit(f"ecu-sim refused request {seq}: {data[32:].decode('utf-8', 'replace')}")
        t_s = struct.unpack_from("<d", data, HEADER.size + 8 * T_S)[0]
        speeds = [int.from_bytes(payload[5:7], "little") / 256.0
                  for ident, _, payload in frames_of(data, HEADER.size + 8 * args.outputs)
                  if ident == SPEED_ID and int.from_bytes(payload[5:7], "little") < 0xFB00]
        if speeds:
            rows.append(f"{t_s!r},{speeds[-1]!r}")
            frames = [app_frame(pi_step(state, args.set_speed, speeds[-1], args.period), 0)]
        else:
            state, frames = [0.0], []  # no speed: cruise off, no APP frame
    if args.out:
        with open(args.out, "w", encoding="ascii") as out:
            out.write("\n".join(rows) + "\n")
    print(f"t {t_s:.1f} s: speed on the bus {speeds[-1] if speeds else math.nan:.2f} km/h")
    return 0


if __name__ == "__main__":
    sys.exit(main())
